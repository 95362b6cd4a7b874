//! The input rules over gRPC (internal callers such as labctl bypass the gateway): a control
//! character in any string of a request is InvalidArgument `invalid_request` naming the field,
//! never Internal, and nothing is written; a description keeps its newlines.

use crate::helpers::{code_of, details_of, new_key, new_path, spawn_app};
use platform::grpc::{outgoing, outgoing_idempotent};
use proto::webhooks as pb;
use uuid::Uuid;

const CONTROLS: [&str; 5] = ["\u{0}", "\u{1}", "\u{1f}", "\u{7f}", "\u{85}"];

fn assert_refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, field: &str) {
    let status = result.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert_eq!(code_of(&status), "invalid_request");
    assert_eq!(details_of(&status)["field"], field);
}

#[tokio::test]
async fn a_control_character_in_an_endpoint_id_is_invalid_not_internal() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let endpoint = app.register(customer, &new_path(), &["order.created"]).await;
    let endpoint_id = endpoint.endpoint.unwrap().id;
    let (token, staff) = (app.token(customer), app.staff());
    let mut client = app.client.clone();
    for control in CONTROLS {
        let id = format!("{endpoint_id}{control}");
        let delete = pb::DeleteEndpointRequest {
            endpoint_id: id.clone(),
        };
        let result = client
            .delete_endpoint(outgoing_idempotent(delete, &token, &new_key()))
            .await;
        assert_refused(result, "endpointId");
        let rotate = pb::RotateSecretRequest {
            endpoint_id: id.clone(),
        };
        let result = client
            .rotate_secret(outgoing_idempotent(rotate, &token, &new_key()))
            .await;
        assert_refused(result, "endpointId");
        let test = pb::SendTestDeliveryRequest {
            endpoint_id: id.clone(),
        };
        let result = client
            .send_test_delivery(outgoing_idempotent(test, &token, &new_key()))
            .await;
        assert_refused(result, "endpointId");
        let list = pb::ListDeliveriesRequest {
            endpoint_id: id.clone(),
            ..Default::default()
        };
        assert_refused(client.list_deliveries(outgoing(list, &token)).await, "endpointId");
        let filtered = pb::ListDeliveriesRequest {
            endpoint_id: endpoint_id.clone(),
            status: Some(format!("dead{control}")),
            ..Default::default()
        };
        assert_refused(client.list_deliveries(outgoing(filtered, &token)).await, "status");
        let page = pb::ListEndpointsRequest {
            cursor: Some(format!("c{control}")),
            ..Default::default()
        };
        assert_refused(client.list_endpoints(outgoing(page, &token)).await, "cursor");
        let redeliver = pb::RedeliverDeadLettersRequest {
            endpoint_id: Some(id.clone()),
        };
        let result = client.redeliver_dead_letters(outgoing(redeliver, &staff)).await;
        assert_refused(result, "endpointId");
        let replay = pb::ReplayEventsRequest {
            endpoint_id: id,
            since: None,
        };
        assert_refused(client.replay_events(outgoing(replay, &staff)).await, "endpointId");
    }
    let list = pb::ListEndpointsRequest::default();
    let listed = client
        .list_endpoints(outgoing(list, &token))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.endpoints.len(), 1);
    assert_eq!(listed.endpoints[0].status, "active");
}

#[tokio::test]
async fn a_control_character_in_a_new_endpoint_is_invalid_and_descriptions_keep_newlines() {
    let app = spawn_app().await;
    let customer = Uuid::now_v7();
    let token = app.token(customer);
    let request = |url: String, event: &str, description: &str| pb::CreateEndpointRequest {
        url,
        events: vec!["order.created".into(), event.to_owned()],
        description: Some(description.to_owned()),
    };
    for control in CONTROLS {
        let url = format!("{}{control}", app.receiver.url(&new_path()));
        let result = app
            .create_with(&token, &new_key(), request(url, "coa.published", "d"))
            .await;
        assert_refused(result, "url");
        let url = app.receiver.url(&new_path());
        let event = format!("coa.published{control}");
        let result = app
            .create_with(&token, &new_key(), request(url, &event, "d"))
            .await;
        assert_refused(result, "events[1]");
        let url = app.receiver.url(&new_path());
        let description = format!("ours {control}");
        let result = app
            .create_with(&token, &new_key(), request(url, "coa.published", &description))
            .await;
        assert_refused(result, "description");
    }
    let url = app.receiver.url(&new_path());
    let created = app
        .create_with(
            &token,
            &new_key(),
            request(url, "coa.published", "line one\r\nline\ttwo"),
        )
        .await
        .unwrap()
        .into_inner();
    let description = created.endpoint.unwrap().description;
    assert_eq!(description.as_deref(), Some("line one\r\nline\ttwo"));
}
