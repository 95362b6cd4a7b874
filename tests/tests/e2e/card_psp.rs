//! Card checkout through the Stripe-shaped PSP adapter, against a local HTTP double of the
//! PSP's API: the session is created at the PSP with the locked amount and our order metadata,
//! the pay page sends the payer there, and the PSP's signed webhooks settle or expire it. A
//! forged webhook and a replayed one are refused; a redelivery changes nothing; a late success
//! after our expiry still settles the unpaid invoice.
//!
//! The double signs its webhooks with PyPI stripe's own `generate_signature_header` when Python
//! stripe is installed (the README's test command installs it), so our verifier is checked
//! against the reference implementation of the scheme.

use crate::card_checkout::{card_order, expire_session, open_page, wait_for_order};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use payments_svc::config::CardProcessorSettings;
use payments_svc::processor::stripe::StripeSettings;
use platform::testing::wait_for;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tests::Sandbox;

pub(crate) const SECRET_KEY: &str = "sk_test_double";
pub(crate) const WEBHOOK_SECRET: &str = "whsec_double_secret";

/// A session the double created: its id and the form it was created with.
type Created = (String, HashMap<String, String>);

/// What the double was asked.
#[derive(Default)]
pub(crate) struct Double {
    /// Created sessions by their Idempotency-Key.
    created: Mutex<HashMap<String, Created>>,
    /// Every create call (an idempotent retry is counted but creates nothing).
    pub(crate) create_calls: Mutex<usize>,
    expired: Mutex<Vec<String>>,
    base_url: Mutex<String>,
}

async fn create_session(
    State(double): State<Arc<Double>>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let authorized = headers.get("authorization").and_then(|value| value.to_str().ok())
        == Some(&format!("Bearer {SECRET_KEY}"));
    if !authorized {
        return (axum::http::StatusCode::UNAUTHORIZED, "no").into_response();
    }
    let key = headers
        .get("idempotency-key")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap();
    *double.create_calls.lock().unwrap() += 1;
    let mut created = double.created.lock().unwrap();
    let next = created.len() + 1;
    let (id, _) = created
        .entry(key)
        .or_insert_with(|| (format!("cs_test_double_{next}"), form))
        .clone();
    let url = format!("{}/c/pay/{id}", double.base_url.lock().unwrap());
    axum::Json(json!({ "id": id, "object": "checkout.session", "url": url })).into_response()
}

async fn expire_psp_session(State(double): State<Arc<Double>>, Path(id): Path<String>) -> axum::Json<Value> {
    double.expired.lock().unwrap().push(id.clone());
    axum::Json(json!({ "id": id, "status": "expired" }))
}

pub(crate) async fn start_double() -> (Arc<Double>, String) {
    let double = Arc::new(Double::default());
    let app = Router::new()
        .route("/v1/checkout/sessions", post(create_session))
        .route("/v1/checkout/sessions/{id}/expire", post(expire_psp_session))
        .with_state(Arc::clone(&double));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *double.base_url.lock().unwrap() = base.clone();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (double, base)
}

/// Signs `payload` at `timestamp` as the PSP does: with PyPI stripe's
/// `WebhookSignature.generate_signature_header` when it is installed, else by the scheme.
fn psp_signature(payload: &str, secret: &str, timestamp: i64) -> String {
    let python = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, stripe; print(stripe.WebhookSignature.generate_signature_header(sys.argv[1], sys.argv[2], int(sys.argv[3])))",
            payload,
            secret,
            &timestamp.to_string(),
        ])
        .output();
    match python {
        Ok(output) if output.status.success() => String::from_utf8(output.stdout).unwrap().trim().to_owned(),
        _ => {
            assert!(
                std::env::var_os("LAB_REQUIRE_PYTHON_TOOLS").is_none(),
                "LAB_REQUIRE_PYTHON_TOOLS is set but python3 cannot sign with PyPI stripe"
            );
            payments_svc::processor::stripe::sign(payload.as_bytes(), secret.as_bytes(), timestamp)
        }
    }
}

fn event(id: &str, kind: &str, psp_session: &str, our_session: &str, amount: i64, intent: &str) -> String {
    json!({
        "id": id,
        "object": "event",
        "type": kind,
        "created": chrono::Utc::now().timestamp(),
        "data": { "object": {
            "id": psp_session,
            "object": "checkout.session",
            "client_reference_id": our_session,
            "amount_total": amount,
            "currency": "usd",
            "payment_status": if kind == "checkout.session.expired" { "unpaid" } else { "paid" },
            "payment_intent": intent,
            "status": if kind == "checkout.session.expired" { "expired" } else { "complete" },
        } }
    })
    .to_string()
}

async fn deliver(sandbox: &Sandbox, payload: &str, signature: &str) -> (u16, Value) {
    let response = sandbox
        .http
        .post(format!("{}/api/processor-webhooks/stripe", sandbox.base_url))
        .header("content-type", "application/json")
        .header("stripe-signature", signature)
        .body(payload.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn session_id(hosted_url: &str) -> &str {
    hosted_url.rsplit('/').next().unwrap()
}

#[tokio::test]
async fn the_psp_adapter_pays_through_the_psps_page_and_refuses_forged_and_replayed_webhooks() {
    let (double, psp_base) = start_double().await;
    let sandbox = Sandbox::start_with(|settings| {
        settings.payments.card_processor = CardProcessorSettings::Stripe(StripeSettings {
            api_base: psp_base.clone(),
            secret_key: SECRET_KEY.to_owned().into(),
            webhook_secret: WEBHOOK_SECRET.to_owned().into(),
        });
        settings.payments.jobs_interval = Duration::from_millis(200);
    })
    .await;
    let agent = sandbox.customer("PSP Buyer", "all").await;
    let order = card_order(&sandbox, &agent, "psp-order-0001").await;
    let order_id = order["id"].as_str().unwrap();
    let total = order["totalCents"].as_i64().unwrap();
    let hosted_url = order["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    let ours = session_id(&hosted_url).to_owned();

    // The pay page opens the PSP session with the locked amount and our metadata, once.
    let page = open_page(&sandbox, &hosted_url).await;
    assert_eq!(page.status, 200);
    assert!(
        page.html.contains(&format!("{psp_base}/c/pay/cs_test_double_1")),
        "{}",
        page.html
    );
    assert!(!page.html.contains("card-number"), "no card form on our page");
    open_page(&sandbox, &hosted_url).await;
    let created = double.created.lock().unwrap().clone();
    assert_eq!(created.len(), 1, "one PSP session per checkout session");
    let (psp_session, form) = created.get(&ours).expect("keyed by our session id").clone();
    assert_eq!(form["mode"], "payment");
    assert_eq!(form["client_reference_id"], ours);
    assert_eq!(form["line_items[0][price_data][unit_amount]"], total.to_string());
    assert_eq!(form["line_items[0][price_data][currency]"], "usd");
    assert_eq!(form["metadata[order_id]"], order_id);
    assert_eq!(
        form["metadata[order_number]"],
        order["orderNumber"].as_str().unwrap()
    );

    let completed = event(
        "evt_1",
        "checkout.session.completed",
        &psp_session,
        &ours,
        total,
        "pi_double_1",
    );
    let now = chrono::Utc::now().timestamp();

    // Forged: signed with another secret.
    let forged = deliver(
        &sandbox,
        &completed,
        &psp_signature(&completed, "whsec_attacker", now),
    )
    .await;
    assert_eq!(forged.0, 400, "{:?}", forged.1);
    assert_eq!(forged.1["error"]["code"], "invalid_signature");
    // Replayed: a genuine signature from ten minutes ago.
    let stale = deliver(
        &sandbox,
        &completed,
        &psp_signature(&completed, WEBHOOK_SECRET, now - 600),
    )
    .await;
    assert_eq!(stale.0, 400);
    assert_eq!(stale.1["error"]["code"], "invalid_signature");
    // Tampered: a genuine signature over another body.
    let tampered_body = completed.replace(&total.to_string(), "1");
    let tampered = deliver(
        &sandbox,
        &tampered_body,
        &psp_signature(&completed, WEBHOOK_SECRET, now),
    )
    .await;
    assert_eq!(tampered.0, 400);
    assert_eq!(
        sandbox.get(&agent.key, &format!("/orders/{order_id}")).await.body["data"]["order"]["paymentState"],
        "unpaid",
        "nothing refused changed the order"
    );

    let signature = psp_signature(&completed, WEBHOOK_SECRET, now);
    let settled = deliver(&sandbox, &completed, &signature).await;
    assert_eq!(settled, (200, json!({ "received": true, "outcome": "settled" })));
    wait_for_order(&sandbox, &agent, order_id, "paid").await;
    // The PSP redelivers the same event: acknowledged, nothing changes.
    let redelivered = deliver(&sandbox, &completed, &signature).await;
    assert_eq!(
        redelivered,
        (200, json!({ "received": true, "outcome": "duplicate" }))
    );
    let payments = sandbox.get(&agent.key, "/payments").await;
    let payments = payments.body["data"].as_array().unwrap();
    assert_eq!(payments.len(), 1);
    assert_eq!(payments[0]["externalReference"], "pi_double_1");
    assert_eq!(payments[0]["rail"], "card_checkout");
    assert_eq!(
        open_page(&sandbox, &hosted_url).await.session_status(),
        "completed"
    );

    // Our expiry ends the PSP session; a success the PSP reports after it still settles.
    let late = card_order(&sandbox, &agent, "psp-order-0002").await;
    let late_url = late["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    open_page(&sandbox, &late_url).await;
    let (late_psp, _) = double.created.lock().unwrap()[session_id(&late_url)].clone();
    expire_session(&sandbox, &late_url).await;
    wait_for(
        "the PSP session to be expired",
        Duration::from_secs(20),
        || async { double.expired.lock().unwrap().contains(&late_psp).then_some(()) },
    )
    .await;
    assert_eq!(open_page(&sandbox, &late_url).await.session_status(), "expired");
    let late_total = late["totalCents"].as_i64().unwrap();
    let late_success = event(
        "evt_2",
        "checkout.session.completed",
        &late_psp,
        session_id(&late_url),
        late_total,
        "pi_double_2",
    );
    let answer = deliver(
        &sandbox,
        &late_success,
        &psp_signature(&late_success, WEBHOOK_SECRET, chrono::Utc::now().timestamp()),
    )
    .await;
    assert_eq!(answer.1["outcome"], "settled", "{answer:?}");
    wait_for_order(&sandbox, &agent, late["id"].as_str().unwrap(), "paid").await;

    // The PSP expiring a session closes ours.
    let third = card_order(&sandbox, &agent, "psp-order-0003").await;
    let third_url = third["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    open_page(&sandbox, &third_url).await;
    let (third_psp, _) = double.created.lock().unwrap()[session_id(&third_url)].clone();
    let expired = event(
        "evt_3",
        "checkout.session.expired",
        &third_psp,
        session_id(&third_url),
        third["totalCents"].as_i64().unwrap(),
        "",
    );
    let answer = deliver(
        &sandbox,
        &expired,
        &psp_signature(&expired, WEBHOOK_SECRET, chrono::Utc::now().timestamp()),
    )
    .await;
    assert_eq!(answer.1["outcome"], "expired");
    assert_eq!(open_page(&sandbox, &third_url).await.session_status(), "expired");
    sandbox.stop().await;
}
