//! Registering, listing, deleting endpoints: validation, scopes, tenancy, secrets never listed.

use crate::helpers::{code_of, details_of, new_key, spawn_app};
use proto::webhooks as pb;
use uuid::Uuid;

fn request(url: &str, events: &[&str]) -> pb::CreateEndpointRequest {
    pb::CreateEndpointRequest {
        url: url.to_owned(),
        events: events.iter().map(|event| (*event).to_owned()).collect(),
        description: None,
    }
}

#[tokio::test]
async fn an_endpoint_is_registered_with_a_secret_and_listed_without_it() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let url = app.receiver.url("/hooks/listed");
    let created = app
        .create_with(
            &app.token(customer),
            &new_key(),
            request(&url, &["order.created", "invoice.created", "order.created"]),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata().get("idempotent-replayed"), None);
    let created = created.into_inner();
    let endpoint = created.endpoint.unwrap();
    assert!(created.signing_secret.starts_with("whsec_"));
    assert_eq!(endpoint.events, vec!["order.created", "invoice.created"]);
    assert_eq!(endpoint.status, "active");
    assert_eq!(endpoint.url, url);

    let default = app
        .create_with(&app.token(customer), &new_key(), request(&url, &[]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(default.endpoint.unwrap().events, vec!["coa.published"]);

    let listing = app
        .client
        .clone()
        .list_endpoints(platform::grpc::outgoing(
            pb::ListEndpointsRequest {
                limit: Some(1),
                cursor: None,
            },
            &app.token(customer),
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listing.endpoints.len(), 1);
    let next = listing.next_cursor.clone().expect("a second page");
    let second = app
        .client
        .clone()
        .list_endpoints(platform::grpc::outgoing(
            pb::ListEndpointsRequest {
                limit: Some(1),
                cursor: Some(next),
            },
            &app.token(customer),
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.endpoints[0].id, endpoint.id);
    let listed = format!(
        "{listing:?}{second:?}{}",
        String::from_utf8_lossy(&prost::Message::encode_to_vec(&listing))
    );
    assert!(!listed.contains(&created.signing_secret));
    assert!(!listed.contains("whsec_"));

    let stored: String =
        sqlx::query_scalar("SELECT secret_sealed FROM webhooks.endpoints WHERE id = $1::uuid")
            .bind(&endpoint.id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(stored.starts_with("v1:dev:"), "sealed at rest");
    assert!(!stored.contains(&created.signing_secret[6..]));
}

#[tokio::test]
async fn unknown_events_missing_scopes_and_missing_keys_are_refused() {
    let app = spawn_app().await;
    let customer = Uuid::new_v4();
    let url = app.receiver.url("/hooks/refused");
    let unknown = app
        .create_with(
            &app.token(customer),
            &new_key(),
            request(&url, &["order.created", "payment.succeeded"]),
        )
        .await
        .unwrap_err();
    assert_eq!(code_of(&unknown), "unknown_event");
    assert_eq!(details_of(&unknown)["field"], "events[1]");

    let limited = app.customer_token(customer, "key-limited", &["webhooks:write", "orders:read"]);
    let missing = app
        .create_with(
            &limited,
            &new_key(),
            request(&url, &["order.created", "payment.confirmed", "coa.published"]),
        )
        .await
        .unwrap_err();
    assert_eq!(code_of(&missing), "insufficient_scope");
    assert_eq!(missing.code(), tonic::Code::PermissionDenied);
    // The same envelope the gateway answers: every required scope, and the missing ones.
    assert_eq!(
        details_of(&missing)["missing"],
        serde_json::json!(["payments:read", "results:read"])
    );
    assert_eq!(
        details_of(&missing)["required"],
        serde_json::json!(["webhooks:write", "orders:read", "payments:read", "results:read"])
    );
    let default_needs_results = app
        .create_with(&limited, &new_key(), request(&url, &[]))
        .await
        .unwrap_err();
    assert_eq!(
        details_of(&default_needs_results)["missing"],
        serde_json::json!(["results:read"])
    );

    let reader = app.customer_token(customer, "key-reader", &["webhooks:read", "orders:read"]);
    let no_write = app
        .create_with(&reader, &new_key(), request(&url, &["order.created"]))
        .await
        .unwrap_err();
    assert_eq!(code_of(&no_write), "insufficient_scope");

    let without_key = platform::grpc::outgoing(request(&url, &[]), &app.token(customer));
    let status = app.client.clone().create_endpoint(without_key).await.unwrap_err();
    assert_eq!(code_of(&status), "idempotency_key_missing");

    let staff = app
        .create_with(&app.staff(), &new_key(), request(&url, &[]))
        .await
        .unwrap_err();
    assert_eq!(code_of(&staff), "forbidden");
}

#[tokio::test]
async fn another_customers_endpoint_is_not_found_and_deletion_hides_an_endpoint() {
    let app = spawn_app().await;
    let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
    let endpoint = app
        .register(alice, "/hooks/alice", &["order.created"])
        .await
        .endpoint
        .unwrap();
    let delete = |customer: Uuid, id: &str, key: &str| {
        let request = pb::DeleteEndpointRequest {
            endpoint_id: id.to_owned(),
        };
        let request = platform::grpc::outgoing_idempotent(request, &app.token(customer), key);
        let mut client = app.client.clone();
        async move { client.delete_endpoint(request).await }
    };
    let foreign = delete(bob, &endpoint.id, &new_key()).await.unwrap_err();
    assert_eq!(code_of(&foreign), "not_found");
    let missing = delete(alice, &Uuid::new_v4().to_string(), &new_key())
        .await
        .unwrap_err();
    assert_eq!(code_of(&missing), "not_found");
    assert_eq!(foreign.message(), missing.message());
    let malformed = delete(alice, "not-a-uuid", &new_key()).await.unwrap_err();
    assert_eq!(code_of(&malformed), "invalid_request");

    for (operation, status) in [
        ("rotate", {
            let request = pb::RotateSecretRequest {
                endpoint_id: endpoint.id.clone(),
            };
            app.client
                .clone()
                .rotate_secret(platform::grpc::outgoing_idempotent(
                    request,
                    &app.token(bob),
                    &new_key(),
                ))
                .await
                .unwrap_err()
        }),
        ("test", {
            let request = pb::SendTestDeliveryRequest {
                endpoint_id: endpoint.id.clone(),
            };
            app.client
                .clone()
                .send_test_delivery(platform::grpc::outgoing_idempotent(
                    request,
                    &app.token(bob),
                    &new_key(),
                ))
                .await
                .unwrap_err()
        }),
        ("deliveries", {
            let request = pb::ListDeliveriesRequest {
                endpoint_id: endpoint.id.clone(),
                ..Default::default()
            };
            app.client
                .clone()
                .list_deliveries(platform::grpc::outgoing(request, &app.token(bob)))
                .await
                .unwrap_err()
        }),
    ] {
        assert_eq!(code_of(&status), "not_found", "{operation}");
    }

    let key = new_key();
    let deleted = delete(alice, &endpoint.id, &key).await.unwrap().into_inner();
    assert_eq!(deleted.endpoint.unwrap().status, "deleted");
    let replayed = delete(alice, &endpoint.id, &key).await.unwrap();
    assert_eq!(replayed.metadata().get("idempotent-replayed").unwrap(), "true");
    let again = delete(alice, &endpoint.id, &new_key()).await.unwrap_err();
    assert_eq!(code_of(&again), "not_found");
    let listing = app
        .client
        .clone()
        .list_endpoints(platform::grpc::outgoing(
            pb::ListEndpointsRequest::default(),
            &app.token(alice),
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(listing.endpoints.is_empty());
}
