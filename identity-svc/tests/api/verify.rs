//! `VerifyApiKey`: the gateway's question on a miss of its key cache.

use crate::helpers::spawn_app;
use proto::identity as pb;
use proto::identity::verify_api_key_response::Outcome;

fn verify(token: &str, key: &str) -> tonic::Request<pb::VerifyApiKeyRequest> {
    platform::grpc::outgoing(pb::VerifyApiKeyRequest { key: key.into() }, token)
}

#[tokio::test]
async fn a_presented_key_is_valid_unknown_wrong_or_revoked_and_only_the_gateway_may_ask() {
    let service = spawn_app().await;
    let mut client = service.identity.client().await;
    let customer = service.identity.keyed_customer(&["orders:read"]).await;
    let (key, plaintext) = (customer.key, customer.plaintext);
    let gateway = service.identity.keys.mint_service(platform::mesh::GATEWAY, None);

    let answer = client
        .verify_api_key(verify(&gateway, &plaintext))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.outcome(), Outcome::Valid);
    let verified = answer.key.unwrap();
    assert_eq!(
        (
            verified.id.as_str(),
            verified.customer_id.as_str(),
            verified.spend_limit_cents
        ),
        (
            key.id.as_str(),
            key.customer_id.as_str(),
            Some(platform::testing::identity::KEYED_CUSTOMER_SPEND_LIMIT_CENTS)
        )
    );
    assert_eq!(verified.scopes, vec!["orders:read"]);

    let (prefix, _) = plaintext.rsplit_once('_').unwrap();
    let wrong = format!("{prefix}_{}", "x".repeat(32));
    let answer = client
        .verify_api_key(verify(&gateway, &wrong))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((answer.outcome(), answer.key), (Outcome::WrongSecret, None));
    for unknown in [
        "svc_live_nosuchkey0000000_abcdefghijklmnopqrstuvwxyz012345",
        "not a key",
    ] {
        let answer = client
            .verify_api_key(verify(&gateway, unknown))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(answer.outcome(), Outcome::Unknown, "{unknown}");
    }

    // Another service, an operator and anyone without a token are refused.
    for refused in [
        verify(
            &service
                .identity
                .keys
                .mint_service(platform::mesh::SHIPPING_SVC, None),
            &plaintext,
        ),
        service.identity.admin(pb::VerifyApiKeyRequest {
            key: plaintext.clone(),
        }),
    ] {
        let status = client.verify_api_key(refused).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::PermissionDenied);
    }
    let anonymous = client
        .verify_api_key(pb::VerifyApiKeyRequest {
            key: plaintext.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(anonymous.code(), tonic::Code::Unauthenticated);

    client
        .revoke_api_key(service.identity.admin(pb::RevokeApiKeyRequest { key: key.id }))
        .await
        .unwrap();
    let answer = client
        .verify_api_key(verify(&gateway, &plaintext))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((answer.outcome(), answer.key), (Outcome::Revoked, None));
}

#[tokio::test]
async fn a_revocation_is_announced_on_the_channel_every_gateway_subscribes_to() {
    use futures::StreamExt;
    let service = spawn_app().await;
    let key = service.identity.keyed_customer(&["orders:read"]).await.key;
    let redis = redis::Client::open(platform::testing::redis_url()).unwrap();
    let mut pubsub = redis.get_async_pubsub().await.unwrap();
    pubsub
        .subscribe(platform::streams::key_revocation_channel(&service.stream_prefix))
        .await
        .unwrap();
    service
        .identity
        .client()
        .await
        .revoke_api_key(service.identity.admin(pb::RevokeApiKeyRequest {
            key: key.public_id.clone(),
        }))
        .await
        .unwrap();
    let message = pubsub.on_message().next().await.unwrap();
    assert_eq!(message.get_payload::<String>().unwrap(), key.public_id);
}
