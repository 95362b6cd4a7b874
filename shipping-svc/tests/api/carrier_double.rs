//! A local double of the EasyPost calls a label void makes: `GET /v2/shipments/{id}` (the
//! shipment with its `refund_status`, null before any refund) and `POST /v2/shipments/{id}/refund`
//! (answers the shipment with `refund_status` `submitted`, or `rejected` when told to reject),
//! with HTTP basic authentication by API key. It counts the refunds it performed and can lose
//! the answer of a performed refund (500), as when our side crashes before its commit.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use shipping_svc::carrier::easypost::{EasyPostCarrier, EasyPostSettings};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The API key the double accepts.
pub const API_KEY: &str = "EZTKvoid0000000000";

#[derive(Default)]
struct Book {
    /// Every request: `METHOD path` and its `authorization` header.
    requests: Vec<(String, String)>,
    /// Refund status per carrier shipment (absent: never refunded).
    refunds: BTreeMap<String, String>,
    refunds_performed: u32,
    /// Answer refunds with `rejected`.
    reject: bool,
    /// Refunds still to perform whose answer is then lost (500).
    lose_answers: u32,
    /// Refund requests still to fail before anything is performed (503).
    unavailable: u32,
}

/// A running double.
#[derive(Clone)]
pub struct RefundDouble {
    base_url: String,
    book: Arc<Mutex<Book>>,
}

fn authorized(headers: &HeaderMap) -> (bool, String) {
    use base64::Engine;
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{API_KEY}:"))
    );
    let given = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (given == expected, given)
}

fn shipment(id: &str, refund_status: Option<&String>) -> Json<Value> {
    Json(json!({ "object": "Shipment", "id": id, "mode": "test", "refund_status": refund_status }))
}

async fn retrieve(
    State(book): State<Arc<Mutex<Book>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> (StatusCode, Json<Value>) {
    let (ok, given) = authorized(&headers);
    let mut book = book.lock().unwrap();
    book.requests.push((format!("GET /v2/shipments/{id}"), given));
    if !ok {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({ "error": { "code": "APIKEY.INACTIVE" } })),
        );
    }
    let status = book.refunds.get(&id).cloned();
    (StatusCode::OK, shipment(&id, status.as_ref()))
}

async fn refund(
    State(book): State<Arc<Mutex<Book>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> (StatusCode, Json<Value>) {
    let (ok, given) = authorized(&headers);
    let mut book = book.lock().unwrap();
    book.requests
        .push((format!("POST /v2/shipments/{id}/refund"), given));
    if !ok {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({ "error": { "code": "APIKEY.INACTIVE" } })),
        );
    }
    if book.unavailable > 0 {
        book.unavailable -= 1;
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": { "code": "SERVICE.UNAVAILABLE" } })),
        );
    }
    let status = if book.reject { "rejected" } else { "submitted" }.to_owned();
    book.refunds.insert(id.clone(), status.clone());
    book.refunds_performed += 1;
    if book.lose_answers > 0 {
        book.lose_answers -= 1;
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "error": { "code": "INTERNAL_SERVER_ERROR" } })),
        );
    }
    (StatusCode::OK, shipment(&id, Some(&status)))
}

impl RefundDouble {
    /// Starts the double on a free loopback port.
    pub async fn start() -> Self {
        let book = Arc::new(Mutex::new(Book::default()));
        let app = Router::new()
            .route("/v2/shipments/{id}", get(retrieve))
            .route("/v2/shipments/{id}/refund", post(refund))
            .with_state(book.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base_url, book }
    }

    /// The EasyPost adapter pointed at the double.
    pub fn adapter(&self) -> EasyPostCarrier {
        EasyPostCarrier::new(EasyPostSettings {
            base_url: self.base_url.clone(),
            api_key: API_KEY.to_owned().into(),
            webhook_secret: "unused".to_owned().into(),
            webhook_tolerance: Duration::from_secs(300),
            carrier: "UPS".to_owned(),
            service: "Ground".to_owned(),
        })
        .unwrap()
    }

    /// Refunds performed so far.
    pub fn refunds_performed(&self) -> u32 {
        self.book.lock().unwrap().refunds_performed
    }

    /// Every request: `METHOD path` and its `authorization` header.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.book.lock().unwrap().requests.clone()
    }

    /// Refunds are answered `rejected` from now on.
    pub fn reject_refunds(&self) {
        self.book.lock().unwrap().reject = true;
    }

    /// The next `count` refunds are performed but their answer is lost (500).
    pub fn lose_next_answers(&self, count: u32) {
        self.book.lock().unwrap().lose_answers = count;
    }

    /// The next `count` refund requests fail (503) before anything is performed.
    pub fn fail_next(&self, count: u32) {
        self.book.lock().unwrap().unavailable = count;
    }
}
