//! A service cannot act for a customer it was not asked to serve: a service token that names a
//! customer, validly signed by that service, is refused unless the call carries the gateway's
//! delegation for that customer or a signed event of that customer (`platform::delegation`).
//! The flows that legitimately act for a customer through another service (placing an order:
//! orders-svc at catalog-svc and payments-svc; a label and its email: shipping-svc at catalog-svc
//! and the identity API from an event) pass in the rest of the suite.

use platform::delegation::{CustomerContext, acting_for};
use platform::event_signing::EventSigner;
use platform::principal::{Principal, PrincipalKind};
use platform::tokens::{SigningKey, TokenIssuer};
use prost::Message;
use proto::events::EventEnvelope;
use proto::identity::identity_service_client::IdentityServiceClient;
use proto::payments::payments_service_client::PaymentsServiceClient;
use tests::Sandbox;
use uuid::Uuid;

/// A process of the mesh minting its own tokens with its (development) key, as a compromised
/// process could.
fn issuer(process: &str) -> TokenIssuer {
    TokenIssuer::new(process, SigningKey::development(process))
}

/// The gateway's delegation for a request of `customer_id`'s key.
fn delegation_for(customer_id: Uuid) -> CustomerContext {
    let principal = Principal {
        kind: PrincipalKind::Customer,
        subject: "key_test".into(),
        customer_id: Some(customer_id),
        scopes: vec!["orders:write".into()],
        roles: vec![],
        spend_limit_cents: None,
        operator_id: None,
        credential_id: None,
        sandbox: false,
    };
    let token = issuer("gateway")
        .delegation(&principal, "req-customer-bound")
        .unwrap();
    CustomerContext::Delegation(token.into())
}

/// A `payment.confirmed` of `customer_id` as payments-svc's relay signs it on `stream`.
fn signed_event(stream: &str, customer_id: Uuid) -> CustomerContext {
    let envelope = EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: "payment.confirmed".into(),
        occurred_at: platform::time::rfc3339(platform::time::now()),
        customer_id: customer_id.to_string(),
        source: "payments-svc".into(),
        ..Default::default()
    }
    .encode_to_vec();
    let signer = EventSigner::development("payments-svc");
    CustomerContext::event(
        stream,
        &envelope,
        signer.kid().as_bytes(),
        &signer.sign(stream, &envelope),
    )
}

/// Asks identity-svc, as shipping-svc acting for `customer_id`, for that customer's contact,
/// within `context` when given.
async fn get_customer(
    sandbox: &Sandbox,
    customer_id: Uuid,
    context: Option<CustomerContext>,
) -> Result<String, tonic::Status> {
    let mut client = IdentityServiceClient::connect(sandbox.in_process().identity_uri.clone())
        .await
        .unwrap();
    let token = issuer("shipping-svc").service_token(platform::mesh::IDENTITY_SVC, Some(customer_id));
    let call = async move {
        let request = proto::identity::GetCustomerRequest {
            customer_id: customer_id.to_string(),
        };
        client
            .get_customer(platform::grpc::outgoing(request, &token))
            .await
            .map(|answer| {
                answer
                    .into_inner()
                    .customer
                    .map(|customer| customer.email)
                    .unwrap_or_default()
            })
    };
    match context {
        Some(context) => acting_for(context, call).await,
        None => call.await,
    }
}

#[tokio::test]
async fn a_service_token_naming_a_customer_is_refused_without_that_customers_delegation_or_event() {
    let sandbox = Sandbox::start().await;
    let alice = sandbox.customer("Alice Bound", "all").await;
    let bob = sandbox.customer("Bob Bound", "all").await;
    let (alice_id, bob_id) = (
        Uuid::parse_str(&alice.id).unwrap(),
        Uuid::parse_str(&bob.id).unwrap(),
    );
    let payments = platform::streams::stream_name(&sandbox.stream_prefix, platform::streams::PAYMENTS);

    // A validly signed shipping-svc token asking for Bob, with no proof: refused.
    let refused = get_customer(&sandbox, bob_id, None).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    // With the proof of serving Alice (a delegation, or an event of hers): still refused for Bob.
    for proof in [delegation_for(alice_id), signed_event(&payments, alice_id)] {
        let refused = get_customer(&sandbox, bob_id, Some(proof)).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    }
    // An event of Bob's signed for another deployment's stream proves nothing here.
    let elsewhere = platform::streams::stream_name("another-deployment", platform::streams::PAYMENTS);
    let refused = get_customer(&sandbox, bob_id, Some(signed_event(&elsewhere, bob_id)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    // Asked to serve Alice, the same token shape reads Alice.
    for proof in [delegation_for(alice_id), signed_event(&payments, alice_id)] {
        let email = get_customer(&sandbox, alice_id, Some(proof)).await.unwrap();
        assert!(!email.is_empty());
    }

    // A compromised orders-svc committing spend for Bob without Bob's delegation: refused, and
    // nothing is committed (the same call with it is admitted).
    let mut client = PaymentsServiceClient::connect(sandbox.in_process().payments_uri.clone())
        .await
        .unwrap();
    let token = issuer("orders-svc").service_token(platform::mesh::PAYMENTS_SVC, Some(bob_id));
    let commit = |subject: Uuid| proto::payments::CommitSpendRequest {
        key_id: "key_test".into(),
        kind: "order".into(),
        subject_id: subject.to_string(),
        amount_cents: 100,
    };
    let refused = client
        .commit_spend(platform::grpc::outgoing(commit(Uuid::now_v7()), &token))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    let refused = acting_for(delegation_for(alice_id), async {
        client
            .commit_spend(platform::grpc::outgoing(commit(Uuid::now_v7()), &token))
            .await
    })
    .await
    .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    let admitted = acting_for(delegation_for(bob_id), async {
        client
            .commit_spend(platform::grpc::outgoing(commit(Uuid::now_v7()), &token))
            .await
    })
    .await;
    assert!(
        admitted
            .as_ref()
            .err()
            .is_none_or(|status| status.code() != tonic::Code::PermissionDenied),
        "{admitted:?}"
    );
    sandbox.stop().await;
}
