//! Secret rotation: both secrets sign during the overlap, then only the new one.

use crate::helpers::{Options, new_key, new_path, spawn_app_with};
use crate::verify::{assert_verified, parse_header, signed_by};
use proto::webhooks as pb;
use std::time::Duration;
use uuid::Uuid;

#[tokio::test]
async fn during_the_overlap_both_secrets_sign_and_afterwards_only_the_new_one() {
    let app = spawn_app_with(Options {
        rotation_overlap: Duration::from_secs(2),
        ..Options::default()
    })
    .await;
    let customer = Uuid::new_v4();
    let path = new_path();
    let created = app.register(customer, &path, &["order.created"]).await;
    let endpoint_id = created.endpoint.unwrap().id;
    let old_secret = created.signing_secret;
    let send_test = || {
        let request = pb::SendTestDeliveryRequest {
            endpoint_id: endpoint_id.clone(),
        };
        let request = platform::grpc::outgoing_idempotent(request, &app.token(customer), &new_key());
        let mut client = app.client.clone();
        async move { client.send_test_delivery(request).await.unwrap() }
    };

    send_test().await;
    let rotated = app
        .client
        .clone()
        .rotate_secret(platform::grpc::outgoing_idempotent(
            pb::RotateSecretRequest {
                endpoint_id: endpoint_id.clone(),
            },
            &app.token(customer),
            &new_key(),
        ))
        .await
        .unwrap()
        .into_inner();
    let new_secret = rotated.signing_secret;
    let expires = rotated.endpoint.unwrap().previous_secret_expires_at.unwrap();
    send_test().await;

    let requests = app.receiver.requests_to(&path);
    assert_eq!(parse_header(&requests[0].header("x-svc-signature")).1.len(), 1);
    assert!(signed_by(&requests[0], &old_secret));
    let during = &requests[1];
    assert_eq!(parse_header(&during.header("x-svc-signature")).1.len(), 2);
    assert_verified(std::slice::from_ref(during), &new_secret);
    assert_verified(std::slice::from_ref(during), &old_secret);

    let remaining = expires.seconds - chrono::Utc::now().timestamp();
    tokio::time::sleep(Duration::from_millis(
        u64::try_from(remaining.max(0) * 1000 + 1100).unwrap(),
    ))
    .await;
    send_test().await;
    let after = &app.receiver.requests_to(&path)[2];
    assert_eq!(parse_header(&after.header("x-svc-signature")).1.len(), 1);
    assert_verified(std::slice::from_ref(after), &new_secret);
    assert!(!signed_by(after, &old_secret));
}
