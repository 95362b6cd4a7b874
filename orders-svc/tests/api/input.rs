//! The input rules over gRPC (internal callers bypass the gateway): a control character in any
//! string of a request is InvalidArgument `invalid_request` naming the field, never Internal, and
//! nothing is written; free text keeps its tabs and newlines.

use crate::helpers::*;
use platform::error::ErrorCode;
use proto::orders::{ListOrdersRequest, SampleMetadata};

const CONTROLS: [&str; 5] = ["\u{0}", "\u{1}", "\u{1f}", "\u{7f}", "\u{85}"];

fn assert_refused(status: &tonic::Status, field: &str) {
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    let error = error_of(status);
    assert_eq!(error.code, ErrorCode::InvalidRequest);
    assert_eq!(field_of(&error), field);
}

#[tokio::test]
async fn a_control_character_in_a_reference_or_filter_is_invalid_not_internal() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    for control in CONTROLS {
        for reference in [
            format!("ORD-{control}"),
            format!("{}{control}", order.order_number),
        ] {
            assert_refused(&app.get_order(&reference).await.unwrap_err(), "reference");
        }
        let token = app.default_token();
        let by_status = ListOrdersRequest {
            status: Some(format!("pending{control}")),
            ..Default::default()
        };
        let status = app.list_orders_as(&token, by_status).await.unwrap_err();
        assert_refused(&status, "status");
        let by_cursor = ListOrdersRequest {
            cursor: Some(format!("c{control}")),
            ..Default::default()
        };
        assert_refused(
            &app.list_orders_as(&token, by_cursor).await.unwrap_err(),
            "cursor",
        );
    }
    assert_eq!(app.get_order(&order.order_number).await.unwrap(), order);
}

#[tokio::test]
async fn a_control_character_in_an_order_field_is_invalid_and_free_text_keeps_newlines() {
    let app = spawn_app().await;
    let quote = app.quote();
    let compound = quote.lines[0].compound_name.clone();
    let metadata = |lot: &str, notes: &str| SampleMetadata {
        compound_name: compound.clone(),
        lot_number: Some(lot.to_owned()),
        matrix_notes: Some(notes.to_owned()),
    };
    for control in CONTROLS {
        let mut request = order_request(&quote.id);
        request.notes = Some(format!("notes {control}"));
        assert_refused(&app.create_order(&new_key(), request).await.unwrap_err(), "notes");
        let mut request = order_request(&quote.id);
        request.client_reference = Some(format!("PO{control}1"));
        let status = app.create_order(&new_key(), request).await.unwrap_err();
        assert_refused(&status, "clientReference");
        let mut request = order_request(&quote.id);
        request.sample_metadata = vec![metadata(&format!("L{control}"), "fine")];
        let status = app.create_order(&new_key(), request).await.unwrap_err();
        assert_refused(&status, "sampleMetadata[0].lotNumber");
    }
    let mut request = order_request(&quote.id);
    request.sample_metadata = vec![metadata("LOT\t1", "fine")];
    let status = app.create_order(&new_key(), request).await.unwrap_err();
    assert_refused(&status, "sampleMetadata[0].lotNumber");
    assert_eq!(app.order_count().await, 0, "nothing refused was written");

    let mut request = order_request(&quote.id);
    request.notes = Some("line one\r\nline two\ttabbed".into());
    request.sample_metadata = vec![metadata("LOT-1", "matrix\nnotes")];
    let order = app.create_order(&new_key(), request).await.unwrap();
    let order = order.into_inner().order.unwrap();
    assert_eq!(order.notes.as_deref(), Some("line one\r\nline two\ttabbed"));
}
