//! Who may sign which principal for whom.

use super::*;
use uuid::Uuid;

fn customer() -> Principal {
    Principal {
        kind: PrincipalKind::Customer,
        subject: "key-1".into(),
        customer_id: Some(Uuid::nil()),
        scopes: vec!["orders:read".into()],
        roles: vec![],
        spend_limit_cents: Some(10_000),
        operator_id: None,
        credential_id: None,
        sandbox: false,
    }
}

fn staff() -> Principal {
    Principal {
        kind: PrincipalKind::Staff,
        subject: "alice".into(),
        customer_id: None,
        scopes: vec![],
        roles: vec!["payments.admin".into()],
        spend_limit_cents: None,
        operator_id: Some(Uuid::nil()),
        credential_id: None,
        sandbox: false,
    }
}

fn issuer(name: &str) -> TokenIssuer {
    TokenIssuer::new(name, SigningKey::development(name))
}

fn verifier(audience: &str) -> TokenVerifier {
    TokenVerifier::new(audience, TrustedKeys::development())
}

#[test]
fn a_gateway_token_verifies_to_the_same_principal_at_its_audience() {
    let token = issuer("gateway").token(&customer(), "orders-svc");
    assert_eq!(verifier("orders-svc").verify(&token).unwrap(), customer());
    let staff_token = issuer("identity-svc").mint(&staff(), "payments-svc", STAFF_TOKEN_TTL);
    assert_eq!(verifier("payments-svc").verify(&staff_token).unwrap(), staff());
}

#[test]
fn only_identity_svc_signs_staff_principals_and_only_the_gateway_customer_principals() {
    let payments = verifier("payments-svc");
    assert!(
        payments
            .verify(&issuer("gateway").mint(&staff(), "payments-svc", STAFF_TOKEN_TTL))
            .is_err()
    );
    assert!(
        payments
            .verify(&issuer("identity-svc").token(&customer(), "payments-svc"))
            .is_err()
    );
}

#[test]
fn a_token_for_orders_svc_is_refused_by_payments_svc() {
    let token = issuer("gateway").token(&customer(), "orders-svc");
    let error = verifier("payments-svc").verify(&token).unwrap_err();
    assert_eq!(error.code, ErrorCode::Unauthenticated);
}

#[test]
fn a_service_key_cannot_mint_a_customer_or_staff_principal_or_speak_for_another_service() {
    let orders = issuer("orders-svc");
    let catalog = verifier("catalog-svc");
    assert!(catalog.verify(&orders.token(&customer(), "catalog-svc")).is_err());
    assert!(
        catalog
            .verify(&orders.mint(&staff(), "catalog-svc", TOKEN_TTL))
            .is_err()
    );
    let impostor = Principal::service("payments-svc", Some(Uuid::nil()));
    assert!(catalog.verify(&orders.token(&impostor, "catalog-svc")).is_err());
    let own = orders.service_token("catalog-svc", Some(Uuid::nil()));
    let principal = catalog.verify(&own).unwrap();
    assert_eq!(
        (principal.kind, principal.subject.as_str()),
        (PrincipalKind::Service, "orders-svc")
    );
}

#[test]
fn a_token_signed_by_an_untrusted_key_or_under_another_issuers_kid_is_refused() {
    let (rogue, _) = SigningKey::generate("gateway-dev");
    let forged = TokenIssuer::new("gateway", rogue).token(&customer(), "orders-svc");
    assert!(verifier("orders-svc").verify(&forged).is_err());
    // The orders-svc key presenting itself as the gateway: the kid names orders-svc's key.
    let posing = TokenIssuer::new("gateway", SigningKey::development("orders-svc"));
    assert!(
        verifier("orders-svc")
            .verify(&posing.token(&customer(), "orders-svc"))
            .is_err()
    );
}

#[test]
fn several_key_ids_of_one_issuer_are_trusted_during_a_rotation() {
    let (old, _) = SigningKey::generate("gateway-1");
    let (new, _) = SigningKey::generate("gateway-2");
    let keys = TrustedKeys::default().with("gateway", &old).with("gateway", &new);
    let verifier = TokenVerifier::new("orders-svc", keys);
    for key in [old, new] {
        let token = TokenIssuer::new("gateway", key).token(&customer(), "orders-svc");
        assert!(verifier.verify(&token).is_ok());
    }
}

#[test]
fn an_expired_token_is_refused_and_hs256_tokens_are_refused() {
    let gateway = issuer("gateway");
    let expired = {
        let now = unix_now();
        let claims = Claims {
            iss: "gateway".into(),
            aud: "orders-svc".into(),
            iat: now - 600,
            exp: now - 300,
            principal: customer(),
        };
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("gateway-dev".into());
        jsonwebtoken::encode(&header, &claims, &gateway.inner.key.encoding).unwrap()
    };
    assert!(verifier("orders-svc").verify(&expired).is_err());
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("gateway-dev".into());
    let claims = Claims {
        iss: "gateway".into(),
        aud: "orders-svc".into(),
        iat: unix_now(),
        exp: unix_now() + 60,
        principal: customer(),
    };
    let hs = jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_secret(b"x")).unwrap();
    assert!(verifier("orders-svc").verify(&hs).is_err());
}

#[test]
fn minted_tokens_are_reused_per_audience_and_principal() {
    let gateway = issuer("gateway");
    let first = gateway.token(&customer(), "orders-svc");
    assert_eq!(first, gateway.token(&customer(), "orders-svc"));
    assert_ne!(first, gateway.token(&customer(), "catalog-svc"));
    let mut other = customer();
    other.scopes.push("orders:write".into());
    assert_ne!(first, gateway.token(&other, "orders-svc"));
}

#[test]
fn a_staff_token_without_an_operator_id_is_refused() {
    let mut anonymous = staff();
    anonymous.operator_id = None;
    let token = issuer("gateway").mint(&anonymous, "payments-svc", STAFF_TOKEN_TTL);
    let error = verifier("payments-svc").verify(&token).unwrap_err();
    assert_eq!(error.code, ErrorCode::Unauthenticated);
}

#[test]
fn a_verifier_with_the_revocation_list_refuses_a_revoked_operators_token_even_once_cached() {
    use super::revocations::{Revocation, Revoked};
    let list = StaffRevocations::new();
    list.merge_read([]);
    let payments = verifier("payments-svc").with_staff_revocations(list.clone());
    let token = issuer("identity-svc").mint(&staff(), "payments-svc", STAFF_TOKEN_TTL);
    assert!(payments.verify(&token).is_ok(), "verified and cached");
    list.insert(Revocation {
        revoked: Revoked::Operator(Uuid::nil()),
        at: unix_now(),
    });
    assert_eq!(
        payments.verify(&token).unwrap_err().code,
        ErrorCode::Unauthenticated
    );
    // Customer tokens never consult the list.
    let customer = issuer("gateway").token(&customer(), "payments-svc");
    assert!(payments.verify(&customer).is_ok());
}
