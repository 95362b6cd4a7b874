//! GetOrder and ListOrders: references, tenant isolation, pagination and the status filter.

use crate::helpers::*;
use platform::error::ErrorCode;
use proto::orders::ListOrdersRequest;

#[tokio::test]
async fn an_order_is_found_by_uuid_order_number_and_invoice_number() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let invoice_number = order.payment.as_ref().unwrap().invoice_number.clone();
    for reference in [
        order.id.as_str(),
        order.order_number.as_str(),
        invoice_number.as_str(),
    ] {
        assert_eq!(app.get_order(reference).await.unwrap(), order, "{reference}");
    }
    for reference in [
        "ORD-2026-999999",
        "INV-2026-999999",
        "1Z999AA10123456784",
        "",
        &uuid::Uuid::now_v7().to_string(),
    ] {
        let status = app.get_order(reference).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::NotFound, "{reference}");
        assert_eq!(error_of(&status).code, ErrorCode::NotFound);
    }
}

#[tokio::test]
async fn another_customers_order_is_not_found_and_not_listed() {
    let app = spawn_app().await;
    let order = app.place_order().await;
    let stranger = app.token(uuid::Uuid::now_v7(), &ORDER_SCOPES, None);
    let invoice_number = order.payment.as_ref().unwrap().invoice_number.clone();
    for reference in [
        order.id.as_str(),
        order.order_number.as_str(),
        invoice_number.as_str(),
    ] {
        let status = app.get_order_as(&stranger, reference).await.unwrap_err();
        let missing = app.get_order_as(&stranger, "ORD-2000-000000").await.unwrap_err();
        assert_eq!(
            error_of(&status),
            error_of(&missing),
            "indistinguishable from a missing order: {reference}"
        );
    }
    let listed = app
        .list_orders_as(&stranger, ListOrdersRequest::default())
        .await
        .unwrap();
    assert!(listed.orders.is_empty());
    assert_eq!(listed.next_cursor, None);
}

#[tokio::test]
async fn orders_are_listed_newest_first_in_cursor_pages_with_whole_orders() {
    let app = spawn_app().await;
    let mut placed = Vec::new();
    for _ in 0..5 {
        placed.push(app.place_order().await);
    }
    placed.reverse();
    let token = app.default_token();
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = app
            .list_orders_as(
                &token,
                ListOrdersRequest {
                    limit: Some(2),
                    cursor: cursor.clone(),
                    status: None,
                },
            )
            .await
            .unwrap();
        assert!(page.orders.len() <= 2);
        seen.extend(page.orders);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(
        seen, placed,
        "every order once, newest first, with lines, history and payment"
    );
    assert!(
        seen.iter().all(|order| order.lines.len() == 2
            && order.status_history.len() == 1
            && order.payment.is_some())
    );
}

#[tokio::test]
async fn the_status_filter_must_be_a_spec_status() {
    let app = spawn_app().await;
    app.place_order().await;
    let token = app.default_token();
    let sent = app
        .list_orders_as(
            &token,
            ListOrdersRequest {
                status: Some("invoice_sent".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(sent.orders.len(), 1);
    let paid = app
        .list_orders_as(
            &token,
            ListOrdersRequest {
                status: Some("paid".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(paid.orders.is_empty());
    let cancelled = app
        .list_orders_as(
            &token,
            ListOrdersRequest {
                status: Some("cancelled".into()),
                ..Default::default()
            },
        )
        .await;
    assert!(cancelled.unwrap().orders.is_empty());

    let status = app
        .list_orders_as(
            &token,
            ListOrdersRequest {
                status: Some("shipped".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    let error = error_of(&status);
    assert_eq!(
        (error.code, field_of(&error).as_str()),
        (ErrorCode::InvalidRequest, "status")
    );
    let bad_limit = app
        .list_orders_as(
            &token,
            ListOrdersRequest {
                limit: Some(0),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(field_of(&error_of(&bad_limit)), "limit");
    let bad_cursor = app
        .list_orders_as(
            &token,
            ListOrdersRequest {
                cursor: Some("garbage".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&bad_cursor).code, ErrorCode::InvalidCursor);
}
