//! A local double of the EasyPost API, speaking its documented requests and responses for what
//! the adapter uses: `POST /v2/shipments` (rates), `GET /v2/shipments/{id}` (the shipment, with
//! its tracking code and selected rate once bought), `POST /v2/shipments/{id}/buy` (tracking
//! code, label, tracker; a bought shipment is refused as EasyPost does), `POST /v2/pickups`,
//! `GET /v2/pickups/{id}` (status `unknown`, then `scheduled` with its confirmation) and
//! `POST /v2/pickups/{id}/buy` (confirmation; a scheduled pickup is refused),
//! `POST /v2/shipments/{id}/refund` (the label's void: the shipment with `refund_status`
//! `submitted`, or `rejected` when told to; the GET then shows that status), and
//! `POST /v2/pickups/{id}/cancel` (status `canceled`), all with
//! HTTP basic authentication by API key; and the tracker webhooks it would send (each event
//! with its own `evt_…` id), with the headers of EasyPost's timestamped signature:
//! `X-Timestamp` (RFC 2822, `-0000` zone as in EasyPost's example), `X-Path` (the webhook
//! URL's path) and `X-Hmac-Signature-V2: hmac-sha256-hex=<hex HMAC-SHA256 of timestamp +
//! "POST" + path + body>`, plus the legacy body-only `X-Hmac-Signature` EasyPost also sends.
//! The signing is written here independently of the adapter it tests.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// The API key the double accepts.
pub const API_KEY: &str = "EZTKdouble0000000000";
/// The webhook secret the double signs with.
pub const WEBHOOK_SECRET: &str = "double-webhook-secret";
/// The path of the webhook URL the double delivers to (the gateway's route), signed as `X-Path`.
pub const WEBHOOK_PATH: &str = "/api/v1/carriers/easypost/webhooks";

#[derive(Default)]
struct Book {
    /// Every request the double received: (path, body); a GET's path starts with `GET `.
    requests: Vec<(String, Value)>,
    shipments: u32,
    /// Each created shipment as GET answers it (bought ones with their tracking code).
    created: std::collections::BTreeMap<String, Value>,
    /// Labels bought (billed).
    labels_bought: u32,
    /// Purchases still to perform whose answer is then lost (500), as if our side crashed
    /// between the carrier's purchase and its own commit.
    lose_buy_answers: u32,
    /// Each created pickup as GET answers it (scheduled ones with their confirmation).
    pickups: std::collections::BTreeMap<String, Value>,
    /// Pickups bought (booked and billed).
    pickups_bought: u32,
    /// Pickup purchases still to perform whose answer is then lost (500).
    lose_pickup_buy_answers: u32,
    /// Labels voided (refunds performed).
    refunds: u32,
    /// Answer refunds with `refund_status: rejected`.
    reject_refunds: bool,
}

/// A running double.
#[derive(Clone)]
pub struct EasyPostDouble {
    pub addr: SocketAddr,
    book: Arc<Mutex<Book>>,
}

fn authorized(headers: &HeaderMap) -> bool {
    use base64::Engine;
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{API_KEY}:"))
    );
    headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value == expected)
}

fn refused() -> (StatusCode, Json<Value>) {
    (
        StatusCode::UNAUTHORIZED,
        Json(json!({ "error": { "code": "APIKEY.INACTIVE", "message": "The API key is invalid." } })),
    )
}

/// A UPS tracking number with a valid check digit (the same rule as the sandbox's).
fn ups_number(package: u32) -> String {
    let body = format!("EZD001{}{:07}", "03", package);
    let mut sum = 0;
    for (index, character) in body.chars().enumerate() {
        let value = match character {
            '0'..='9' => character as u32 - '0' as u32,
            _ => (character as u32 - 63) % 10,
        };
        sum += if index % 2 == 1 { value * 2 } else { value };
    }
    format!("1Z{body}{}", (10 - sum % 10) % 10)
}

async fn create_shipment(
    State(book): State<Arc<Mutex<Book>>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return refused();
    }
    let mut book = book.lock().unwrap();
    book.shipments += 1;
    let id = format!("shp_{:06}", book.shipments);
    book.requests.push(("/v2/shipments".to_owned(), body.clone()));
    let shipment = &body["shipment"];
    let created = json!({
        "object": "Shipment", "id": id, "mode": "test",
        "to_address": shipment["to_address"], "from_address": shipment["from_address"],
        "parcel": shipment["parcel"], "reference": shipment["reference"],
        "rates": [
            { "object": "Rate", "id": format!("rate_{id}_1"), "carrier": "USPS", "service": "Priority", "rate": "9.10", "shipment_id": id },
            { "object": "Rate", "id": format!("rate_{id}_2"), "carrier": "UPS", "service": "Ground", "rate": "11.45", "shipment_id": id }
        ],
        "tracking_code": null, "selected_rate": null, "postage_label": null, "tracker": null
    });
    book.created.insert(id, created.clone());
    (StatusCode::CREATED, Json(created))
}

async fn retrieve_shipment(
    State(book): State<Arc<Mutex<Book>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return refused();
    }
    let mut book = book.lock().unwrap();
    book.requests
        .push((format!("GET /v2/shipments/{id}"), Value::Null));
    match book.created.get(&id) {
        Some(shipment) => (StatusCode::OK, Json(shipment.clone())),
        None => not_found(),
    }
}

async fn buy_shipment(
    State(book): State<Arc<Mutex<Book>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return refused();
    }
    let mut book = book.lock().unwrap();
    book.requests
        .push((format!("/v2/shipments/{id}/buy"), body.clone()));
    let Some(created) = book.created.get(&id).cloned() else {
        return not_found();
    };
    if !created["tracking_code"].is_null() {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(
                json!({ "error": { "code": "SHIPMENT.POSTAGE.EXISTS", "message": "This shipment already has postage." } }),
            ),
        );
    }
    let number = id.trim_start_matches("shp_").parse::<u32>().unwrap_or(0);
    let tracking = ups_number(number);
    let rate_id = body["rate"]["id"].as_str().unwrap_or_default().to_owned();
    let (carrier, service) = if rate_id.ends_with("_2") {
        ("UPS", "Ground")
    } else {
        ("USPS", "Priority")
    };
    let mut bought = created;
    bought["tracking_code"] = json!(tracking);
    bought["selected_rate"] =
        json!({ "object": "Rate", "id": rate_id, "carrier": carrier, "service": service, "rate": "11.45" });
    bought["postage_label"] = json!({ "object": "PostageLabel", "label_url": format!("https://easypost-files.example/{id}.pdf"), "label_file_type": "application/pdf" });
    bought["tracker"] = json!({ "object": "Tracker", "id": format!("trk_{id}"), "tracking_code": tracking, "status": "pre_transit",
                                "public_url": format!("https://track.easypost.example/{tracking}") });
    book.created.insert(id, bought.clone());
    book.labels_bought += 1;
    if book.lose_buy_answers > 0 {
        book.lose_buy_answers -= 1;
        return lost_answer();
    }
    (StatusCode::OK, Json(bought))
}

/// A purchase performed whose answer is lost on the way (500), as when our side crashes between
/// the carrier's purchase and its own commit.
fn lost_answer() -> (StatusCode, Json<Value>) {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Json(json!({ "error": { "code": "INTERNAL_SERVER_ERROR", "message": "the answer was lost" } })),
    )
}

fn not_found() -> (StatusCode, Json<Value>) {
    (
        StatusCode::NOT_FOUND,
        Json(
            json!({ "error": { "code": "NOT_FOUND", "message": "The requested resource could not be found." } }),
        ),
    )
}

async fn create_pickup(
    State(book): State<Arc<Mutex<Book>>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return refused();
    }
    let mut book = book.lock().unwrap();
    book.requests.push(("/v2/pickups".to_owned(), body.clone()));
    let id = format!("pickup_{:06}", book.pickups.len() + 1);
    let pickup = json!({
        "object": "Pickup", "id": id, "status": "unknown", "confirmation": null,
        "reference": body["pickup"]["reference"],
        "pickup_rates": [{ "object": "PickupRate", "id": "prate_1", "carrier": "UPS", "service": "Same-day Pickup", "rate": "0.00" }]
    });
    book.pickups.insert(id, pickup.clone());
    (StatusCode::CREATED, Json(pickup))
}

async fn retrieve_pickup(
    State(book): State<Arc<Mutex<Book>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return refused();
    }
    let mut book = book.lock().unwrap();
    book.requests.push((format!("GET /v2/pickups/{id}"), Value::Null));
    match book.pickups.get(&id) {
        Some(pickup) => (StatusCode::OK, Json(pickup.clone())),
        None => not_found(),
    }
}

async fn buy_pickup(
    State(book): State<Arc<Mutex<Book>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return refused();
    }
    let mut book = book.lock().unwrap();
    book.requests.push((format!("/v2/pickups/{id}/buy"), body));
    let Some(pickup) = book.pickups.get(&id).cloned() else {
        return not_found();
    };
    if pickup["status"] == "scheduled" {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(
                json!({ "error": { "code": "PICKUP.ALREADY_SCHEDULED", "message": "This pickup is already scheduled." } }),
            ),
        );
    }
    book.pickups_bought += 1;
    let number = book.pickups_bought;
    let mut bought = pickup;
    bought["status"] = json!("scheduled");
    bought["confirmation"] = json!(format!("WTC{:08}", 12_345_000 + number));
    book.pickups.insert(id, bought.clone());
    if book.lose_pickup_buy_answers > 0 {
        book.lose_pickup_buy_answers -= 1;
        return lost_answer();
    }
    (StatusCode::OK, Json(bought))
}

async fn refund_shipment(
    State(book): State<Arc<Mutex<Book>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return refused();
    }
    let mut book = book.lock().unwrap();
    book.requests
        .push((format!("/v2/shipments/{id}/refund"), Value::Null));
    let Some(mut shipment) = book.created.get(&id).cloned() else {
        return not_found();
    };
    if shipment["tracking_code"].is_null() {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(
                json!({ "error": { "code": "SHIPMENT.REFUND.UNAVAILABLE", "message": "The shipment has no postage to refund." } }),
            ),
        );
    }
    let status = if book.reject_refunds {
        "rejected"
    } else {
        "submitted"
    };
    shipment["refund_status"] = json!(status);
    book.created.insert(id, shipment.clone());
    book.refunds += 1;
    (StatusCode::OK, Json(shipment))
}

async fn cancel_pickup(
    State(book): State<Arc<Mutex<Book>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return refused();
    }
    let mut book = book.lock().unwrap();
    book.requests
        .push((format!("/v2/pickups/{id}/cancel"), Value::Null));
    let Some(mut pickup) = book.pickups.get(&id).cloned() else {
        return not_found();
    };
    pickup["status"] = json!("canceled");
    book.pickups.insert(id, pickup.clone());
    (StatusCode::OK, Json(pickup))
}

impl EasyPostDouble {
    /// Starts the double on a free loopback port.
    pub async fn start() -> Self {
        let book = Arc::new(Mutex::new(Book::default()));
        let app = Router::new()
            .route("/v2/shipments", post(create_shipment))
            .route("/v2/shipments/{id}", get(retrieve_shipment))
            .route("/v2/shipments/{id}/buy", post(buy_shipment))
            .route("/v2/pickups", post(create_pickup))
            .route("/v2/pickups/{id}", get(retrieve_pickup))
            .route("/v2/pickups/{id}/buy", post(buy_pickup))
            .route("/v2/shipments/{id}/refund", post(refund_shipment))
            .route("/v2/pickups/{id}/cancel", post(cancel_pickup))
            .with_state(book.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, book }
    }

    /// The API root to configure.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Labels bought (billed) so far.
    pub fn labels_bought(&self) -> u32 {
        self.book.lock().unwrap().labels_bought
    }

    /// The next `count` purchases are performed but their answer is lost (500), as when our
    /// side crashes between the carrier's purchase and its own commit.
    pub fn lose_next_buy_answers(&self, count: u32) {
        self.book.lock().unwrap().lose_buy_answers = count;
    }

    /// Pickups bought (booked and billed) so far.
    pub fn pickups_bought(&self) -> u32 {
        self.book.lock().unwrap().pickups_bought
    }

    /// The next `count` pickup purchases are performed but their answer is lost (500).
    pub fn lose_next_pickup_buy_answers(&self, count: u32) {
        self.book.lock().unwrap().lose_pickup_buy_answers = count;
    }

    /// Labels voided (refunds performed) so far.
    pub fn refunds(&self) -> u32 {
        self.book.lock().unwrap().refunds
    }

    /// Refunds are answered `refund_status: rejected` from now on.
    pub fn reject_refunds(&self) {
        self.book.lock().unwrap().reject_refunds = true;
    }

    /// Every request received: (path, JSON body).
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.book.lock().unwrap().requests.clone()
    }

    /// A `tracker.updated` event of `tracking_code` with one tracking detail per
    /// `(status, status_detail, message, RFC 3339 time)`.
    pub fn tracker_updated(tracking_code: &str, details: &[(&str, &str, &str, &str)]) -> Vec<u8> {
        let details: Vec<Value> = details
            .iter()
            .map(|(status, detail, message, at)| {
                json!({ "object": "TrackingDetail", "status": status, "status_detail": detail, "message": message,
                        "datetime": at, "source": "UPS",
                        "tracking_location": { "object": "TrackingLocation", "city": "Chicago", "state": "IL", "country": "US", "zip": "60607" } })
            })
            .collect();
        let last = details
            .last()
            .and_then(|detail| detail["status"].as_str())
            .unwrap_or("unknown")
            .to_owned();
        json!({
            "object": "Event", "id": format!("evt_{}", uuid::Uuid::now_v7().simple()), "mode": "test",
            "description": "tracker.updated",
            "result": { "object": "Tracker", "id": format!("trk_{tracking_code}"), "tracking_code": tracking_code,
                        "status": last, "carrier": "UPS", "tracking_details": details }
        })
        .to_string()
        .into_bytes()
    }

    /// The headers EasyPost sends with a delivery of `body` now, signed with [`WEBHOOK_SECRET`].
    pub fn signed_headers(body: &[u8]) -> Vec<(&'static str, String)> {
        Self::headers_signed_with(WEBHOOK_SECRET, body, chrono::Utc::now())
    }

    /// The headers of a delivery of `body` sent at `sent_at`, signed with `secret`.
    pub fn headers_signed_with(
        secret: &str,
        body: &[u8],
        sent_at: chrono::DateTime<chrono::Utc>,
    ) -> Vec<(&'static str, String)> {
        use hmac::{Hmac, Mac};
        let timestamp = sent_at.format("%a, %d %b %Y %H:%M:%S -0000").to_string();
        let mut v2 = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        v2.update(timestamp.as_bytes());
        v2.update(b"POST");
        v2.update(WEBHOOK_PATH.as_bytes());
        v2.update(body);
        let mut legacy = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        legacy.update(body);
        vec![
            ("x-timestamp", timestamp),
            ("x-path", WEBHOOK_PATH.to_owned()),
            (
                "x-hmac-signature-v2",
                format!("hmac-sha256-hex={}", hex::encode(v2.finalize().into_bytes())),
            ),
            (
                "x-hmac-signature",
                format!("hmac-sha256-hex={}", hex::encode(legacy.finalize().into_bytes())),
            ),
        ]
    }
}
