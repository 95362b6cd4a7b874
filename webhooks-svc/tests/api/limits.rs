//! The endpoint limit: a customer has at most 20 endpoints (not counting deleted ones); the
//! next registration is 409 `webhook_endpoint_limit_reached`, even when two race for the last
//! place, and a retry with the same key runs again once an endpoint was deleted.

use crate::helpers::{code_of, details_of, new_key, spawn_app};
use proto::webhooks as pb;
use uuid::Uuid;
use webhooks_svc::domain::endpoint::DEFAULT_MAX_ENDPOINTS_PER_CUSTOMER;

fn request(url: &str) -> pb::CreateEndpointRequest {
    pb::CreateEndpointRequest {
        url: url.to_owned(),
        events: vec!["order.created".into()],
        description: None,
    }
}

#[tokio::test]
async fn the_twenty_first_endpoint_is_refused_even_when_two_registrations_race_for_the_twentieth() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let token = app.token(customer);
    let url = app.receiver.url("/hooks/limit");
    assert_eq!(DEFAULT_MAX_ENDPOINTS_PER_CUSTOMER, 20);
    let mut created = Vec::new();
    for _ in 0..19 {
        let endpoint = app
            .create_with(&token, &new_key(), request(&url))
            .await
            .unwrap()
            .into_inner()
            .endpoint
            .unwrap();
        created.push(endpoint.id);
    }

    // Two registrations at 19: exactly one takes the twentieth place.
    let (first_key, second_key) = (new_key(), new_key());
    let (first, second) = tokio::join!(
        app.create_with(&token, &first_key, request(&url)),
        app.create_with(&token, &second_key, request(&url)),
    );
    let (won, lost_key, lost) = match (first, second) {
        (Ok(won), Err(lost)) => (won, second_key, lost),
        (Err(lost), Ok(won)) => (won, first_key, lost),
        other => panic!("exactly one of two racing registrations must pass: {other:?}"),
    };
    created.push(won.into_inner().endpoint.unwrap().id);
    assert_eq!(code_of(&lost), "webhook_endpoint_limit_reached");
    assert_eq!(lost.code(), tonic::Code::FailedPrecondition);
    assert_eq!(details_of(&lost)["limit"], 20);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM webhooks.endpoints WHERE customer_id = $1")
        .bind(customer)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(count, 20);

    // Another customer is not affected.
    app.create_with(&app.token(Uuid::new_v4()), &new_key(), request(&url))
        .await
        .unwrap();

    // After a deletion, the refused request retried with the same key runs again and passes.
    let delete = pb::DeleteEndpointRequest {
        endpoint_id: created[0].clone(),
    };
    app.client
        .clone()
        .delete_endpoint(platform::grpc::outgoing_idempotent(delete, &token, &new_key()))
        .await
        .unwrap();
    let retried = app.create_with(&token, &lost_key, request(&url)).await.unwrap();
    assert_eq!(retried.metadata().get("idempotent-replayed"), None);
    let refused = app
        .create_with(&token, &new_key(), request(&url))
        .await
        .unwrap_err();
    assert_eq!(code_of(&refused), "webhook_endpoint_limit_reached");
}
