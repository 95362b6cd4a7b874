//! Staff operations: reading any endpoint's deliveries and replaying stored events.

use crate::envelopes::order_created;
use crate::helpers::{code_of, new_path, spawn_app};
use proto::webhooks as pb;
use uuid::Uuid;

#[tokio::test]
async fn staff_replay_sends_stored_events_again_with_their_original_ids() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let path = new_path();
    let created = app.register(customer, &path, &["order.created"]).await;
    let endpoint_id = created.endpoint.unwrap().id;
    let since = platform::time::now();
    let events: Vec<_> = (0..3).map(|_| order_created(customer)).collect();
    for event in &events {
        app.publish(platform::streams::ORDERS, event).await;
    }
    let first = app.wait_for_requests(&path, 3).await;
    app.wait_for_deliveries(
        customer,
        &endpoint_id,
        "three succeeded deliveries",
        |deliveries| {
            deliveries.len() == 3 && deliveries.iter().all(|delivery| delivery.status == "succeeded")
        },
    )
    .await;

    let staff_listing = app
        .client
        .clone()
        .list_deliveries(platform::grpc::outgoing(
            pb::ListDeliveriesRequest {
                endpoint_id: endpoint_id.clone(),
                status: Some("succeeded".into()),
                limit: Some(2),
                cursor: None,
            },
            &app.staff(),
        ))
        .await;
    let staff_listing = match staff_listing {
        Ok(listing) => listing.into_inner(),
        Err(status) => panic!("{status:?}"),
    };
    assert_eq!(staff_listing.deliveries.len(), 2);
    assert!(staff_listing.next_cursor.is_some());

    let replay = |token: String| {
        let request = pb::ReplayEventsRequest {
            endpoint_id: endpoint_id.clone(),
            since: Some(platform::time::to_timestamp(since)),
        };
        let mut client = app.client.clone();
        async move {
            client
                .replay_events(platform::grpc::outgoing(request, &token))
                .await
        }
    };
    let refused = replay(app.token(customer)).await.unwrap_err();
    assert_eq!(code_of(&refused), "forbidden");
    let queued = replay(app.staff()).await.unwrap().into_inner();
    assert_eq!(queued.queued, 3);
    let all = app.wait_for_requests(&path, 6).await;
    let again = &all[3..];
    let ids = |requests: &[platform::test_receiver::RecordedRequest]| {
        let mut ids: Vec<String> = requests.iter().map(|r| r.header("x-svc-event-id")).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(again), ids(&first));
    for request in again {
        let original = first
            .iter()
            .find(|earlier| earlier.header("x-svc-event-id") == request.header("x-svc-event-id"))
            .unwrap();
        assert_eq!(original.body, request.body);
        assert_ne!(
            original.header("x-svc-delivery-id"),
            request.header("x-svc-delivery-id")
        );
    }
    crate::verify::assert_verified(&all, &created.signing_secret);
}
