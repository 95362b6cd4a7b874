//! Lab operators act as themselves: their own credential, exchanged for a staff token addressed
//! to one service with only the roles a command needs; the audit trail names them; development
//! secrets are refused outside development mode.

use crate::helpers::{issue, spawn_app, spawn_production};
use identity_svc::domain::operator::DEV_OPERATOR_CREDENTIAL;
use platform::principal::{PrincipalKind, roles};
use platform::tokens::{SigningKey, TokenVerifier, TrustedKeys};
use proto::identity as pb;

async fn create_operator(app: &crate::helpers::TestApp, name: &str, roles: &str) -> String {
    let message = pb::CreateOperatorRequest {
        name: name.into(),
        roles: roles.split(',').map(str::to_owned).collect(),
    };
    let created = app
        .identity
        .client()
        .await
        .create_operator(app.identity.admin(message))
        .await
        .unwrap()
        .into_inner();
    let operator = created.operator.unwrap();
    assert_eq!(
        (operator.name.as_str(), operator.created_by.as_str()),
        (name, "alice")
    );
    created.credential
}

#[tokio::test]
async fn an_operator_gets_a_token_for_one_service_carrying_only_the_roles_asked_for() {
    let app = spawn_app().await;
    let credential = create_operator(&app, "bob", "payments.admin,webhooks.admin").await;
    assert!(credential.starts_with("lab_op_"));
    let issued = app
        .identity
        .client()
        .await
        .issue_staff_token(issue(&credential, "payments-svc", &[roles::PAYMENTS_ADMIN]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(issued.operator, "bob");
    let payments = TokenVerifier::new("payments-svc", TrustedKeys::development());
    let principal = payments.verify(&issued.token).unwrap();
    assert_eq!(principal.kind, PrincipalKind::Staff);
    assert_eq!(principal.subject, "bob");
    assert_eq!(principal.roles, vec![roles::PAYMENTS_ADMIN.to_owned()]);
    // The operator's stable id and the credential the token was issued for.
    let (id, public_id): (uuid::Uuid, String) =
        sqlx::query_as("SELECT id, public_id FROM identity.operators WHERE name = 'bob'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(principal.operator_id, Some(id));
    assert_eq!(principal.credential_id, Some(public_id));
    let webhooks = TokenVerifier::new("webhooks-svc", TrustedKeys::development());
    assert!(
        webhooks.verify(&issued.token).is_err(),
        "addressed to payments-svc only"
    );
}

#[tokio::test]
async fn a_role_the_operator_lacks_a_wrong_credential_and_a_disabled_operator_get_no_token() {
    let app = spawn_app().await;
    let credential = create_operator(&app, "carol", "catalog.admin").await;
    let mut client = app.identity.client().await;
    let lacking = client
        .issue_staff_token(issue(&credential, "payments-svc", &[roles::PAYMENTS_ADMIN]))
        .await
        .unwrap_err();
    assert_eq!(lacking.code(), tonic::Code::PermissionDenied);
    // The last character changed (to another one: a credential may end in `x`).
    let mut tampered = credential.clone();
    let last = tampered.pop();
    tampered.push(if last == Some('x') { 'y' } else { 'x' });
    let wrong = client
        .issue_staff_token(issue(&tampered, "catalog-svc", &[roles::CATALOG_ADMIN]))
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), tonic::Code::Unauthenticated);
    let unknown_audience = client
        .issue_staff_token(issue(&credential, "mainframe", &[roles::CATALOG_ADMIN]))
        .await
        .unwrap_err();
    assert_eq!(unknown_audience.code(), tonic::Code::InvalidArgument);

    let rotated = app.rotate_credential("carol").await;
    let old = client
        .issue_staff_token(issue(&credential, "catalog-svc", &[roles::CATALOG_ADMIN]))
        .await
        .unwrap_err();
    assert_eq!(old.code(), tonic::Code::Unauthenticated);
    assert!(
        client
            .issue_staff_token(issue(&rotated, "catalog-svc", &[roles::CATALOG_ADMIN]))
            .await
            .is_ok()
    );
    client
        .disable_operator(
            app.identity
                .admin(pb::DisableOperatorRequest { name: "carol".into() }),
        )
        .await
        .unwrap();
    let disabled = client
        .issue_staff_token(issue(&rotated, "catalog-svc", &[roles::CATALOG_ADMIN]))
        .await
        .unwrap_err();
    assert_eq!(disabled.code(), tonic::Code::Unauthenticated);
}

#[tokio::test]
async fn keys_and_customers_record_the_operator_who_created_or_revoked_them() {
    let app = spawn_app().await;
    let customer = app.identity.keyed_customer(&["orders:read"]).await;
    let mut client = app.identity.client().await;
    let revoke = platform::grpc::outgoing(
        pb::RevokeApiKeyRequest {
            key: customer.key.id.clone(),
        },
        &app.identity.keys.staff("dave", &[roles::IDENTITY_ADMIN]),
    );
    client.revoke_api_key(revoke).await.unwrap();
    let (created_by, revoked_by): (Option<String>, Option<String>) =
        sqlx::query_as("SELECT created_by, revoked_by FROM identity.api_keys WHERE id = $1::uuid")
            .bind(&customer.key.id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        (created_by.as_deref(), revoked_by.as_deref()),
        (Some("alice"), Some("dave"))
    );
    let registered_by: Option<String> =
        sqlx::query_scalar("SELECT created_by FROM identity.customers WHERE id = $1::uuid")
            .bind(&customer.customer_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(registered_by.as_deref(), Some("alice"));
}

#[tokio::test]
async fn the_development_operator_works_in_development_mode_only() {
    let app = spawn_app().await;
    let issued = app
        .identity
        .client()
        .await
        .issue_staff_token(issue(
            DEV_OPERATOR_CREDENTIAL,
            "catalog-svc",
            &[roles::CATALOG_ADMIN],
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(issued.operator, "dev-operator");

    // A deployment outside development mode (real keys and pepper) refuses the published
    // credential before looking it up, even where a development run left its row behind.
    let production = spawn_production(&app.database_url, &app.stream_prefix).await;
    let refused = production
        .client()
        .await
        .issue_staff_token(issue(
            DEV_OPERATOR_CREDENTIAL,
            "catalog-svc",
            &[roles::CATALOG_ADMIN],
        ))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
}

#[tokio::test]
async fn startup_refuses_development_secrets_outside_development_mode() {
    let database_url = platform::testing::fresh_database().await;
    let local = || {
        let mut settings = identity_svc::Settings::local(
            &database_url,
            &platform::testing::redis_url(),
            &platform::testing::unique_stream_prefix(),
        );
        settings.common.dev_mode = false;
        settings
    };
    let issuer = platform::mesh::IDENTITY_SVC;
    let (key, private) = SigningKey::generate("identity-1");
    let trusted = serde_json::json!({ "keys": [key.public_jwk(issuer)] }).to_string();
    let refusal = |settings: identity_svc::Settings| async move {
        match identity_svc::Application::build(settings).await {
            Ok(_) => panic!("identity-svc started"),
            Err(error) => error.to_string(),
        }
    };

    // The published development pepper.
    let mut settings = local();
    settings.common.token_signing_key = Some(private.clone());
    settings.common.token_trusted_keys = Some(trusted.clone());
    assert!(refusal(settings).await.contains("LAB_API_KEY_PEPPER"));

    // No signing key and no trust set.
    let mut settings = local();
    settings.api_key_pepper = "a-real-pepper".to_owned().into();
    assert!(refusal(settings).await.contains("LAB_TOKEN_TRUSTED_KEYS"));

    // The published development signing key of identity-svc.
    let development = SigningKey::development(issuer);
    let mut settings = local();
    settings.api_key_pepper = "a-real-pepper".to_owned().into();
    settings.common.token_trusted_keys = Some(trusted.clone());
    settings.common.token_signing_key = Some(
        serde_json::json!({
            "kty": "OKP", "crv": "Ed25519", "kid": development.kid, "x": development.public_x,
            "d": dev_seed(issuer),
        })
        .to_string()
        .into(),
    );
    assert!(refusal(settings).await.contains("development key"));

    // Real secrets start.
    let mut settings = local();
    settings.api_key_pepper = "a-real-pepper".to_owned().into();
    settings.common.token_signing_key = Some(private);
    settings.common.token_trusted_keys = Some(trusted);
    assert!(identity_svc::Application::build(settings).await.is_ok());
}

/// The published development seed (documented in platform::tokens) as a JWK `d`.
fn dev_seed(issuer: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let seed = sha2::Sha256::digest(format!("lab-mesh development token key v1:{issuer}").as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(seed)
}
