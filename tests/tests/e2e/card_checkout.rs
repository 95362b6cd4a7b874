//! Card checkout through the hosted pay page with the sandbox processor, over plain HTTP (the
//! browser test drives the same page with Chromium): the hosted URL of a card order, declines
//! that leave the session open, settlement exactly once (double click, two tabs), the
//! authentication step, saved cards, expiry and a fresh link from `POST /payments/prepare`, and
//! another customer's reach.

use crate::support::{quote, stream_events};
use platform::testing::wait_for;
use proto::events::event_envelope::Data;
use serde_json::{Value, json};
use std::time::Duration;
use tests::{Customer, Sandbox};

/// The success card and the generic decline card of the sandbox.
pub const SUCCESS_CARD: &str = "4242424242424242";
pub const DECLINE_CARD: &str = "4000000000000002";

/// Places a card-rail order; returns the order JSON.
pub async fn card_order(sandbox: &Sandbox, customer: &Customer, key: &str) -> Value {
    let quote = quote(sandbox, customer, &["BPC-157"]).await;
    let body = json!({ "quoteId": quote["id"], "paymentMethod": "card_checkout", "confirm": true });
    let created = sandbox
        .post(&customer.key, "/orders", &body, &[("Idempotency-Key", key)])
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    created.body["data"]["order"].clone()
}

/// A page answer: status and HTML.
pub struct Page {
    pub status: u16,
    pub html: String,
}

impl Page {
    /// The `data-outcome` of the page's main element.
    pub fn outcome(&self) -> &str {
        attribute(&self.html, "data-outcome")
    }

    /// The `data-status` of the session shown.
    pub fn session_status(&self) -> &str {
        attribute(&self.html, "data-status")
    }
}

fn attribute<'a>(html: &'a str, name: &str) -> &'a str {
    let marker = format!("{name}=\"");
    html.find(&marker)
        .map(|start| &html[start + marker.len()..])
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
}

/// GET of a hosted URL without any credential.
pub async fn open_page(sandbox: &Sandbox, url: &str) -> Page {
    let response = sandbox.http.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    Page {
        status,
        html: response.text().await.unwrap(),
    }
}

/// POSTs the pay form of a hosted URL.
pub async fn submit(sandbox: &Sandbox, url: &str, form: &[(&str, &str)]) -> Page {
    let response = sandbox.http.post(url).form(form).send().await.unwrap();
    let status = response.status().as_u16();
    Page {
        status,
        html: response.text().await.unwrap(),
    }
}

/// Pays a hosted URL with `card` (a future expiry, any CVC).
pub async fn pay_with(sandbox: &Sandbox, url: &str, card: &str) -> Page {
    submit(
        sandbox,
        url,
        &[
            ("card_number", card),
            ("exp_month", "12"),
            ("exp_year", "2034"),
            ("cvc", "123"),
        ],
    )
    .await
}

async fn order_status(sandbox: &Sandbox, customer: &Customer, order_id: &str) -> String {
    let answer = sandbox.get(&customer.key, &format!("/orders/{order_id}")).await;
    answer.body["data"]["order"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits for an order to reach `status`; `paid` is the order's payment state, since a
/// ship-first order keeps its physical status (`label_generated`, …) when its payment lands.
pub async fn wait_for_order(sandbox: &Sandbox, customer: &Customer, order_id: &str, status: &str) {
    wait_for(
        &format!("the order to be {status}"),
        Duration::from_secs(20),
        || async {
            let reached = if status == "paid" {
                let answer = sandbox.get(&customer.key, &format!("/orders/{order_id}")).await;
                answer.body["data"]["order"]["paymentState"] == "paid"
            } else {
                order_status(sandbox, customer, order_id).await == status
            };
            reached.then_some(())
        },
    )
    .await;
}

async fn card_payments(sandbox: &Sandbox, customer: &Customer, invoice_id: &str) -> Vec<Value> {
    let answer = sandbox
        .get(&customer.key, &format!("/payments?invoiceId={invoice_id}"))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["data"].as_array().unwrap().clone()
}

/// Moves a session's expiry into the past, as if its quote had run out.
pub async fn expire_session(sandbox: &Sandbox, hosted_url: &str) {
    let id = hosted_url.rsplit('/').next().unwrap();
    let pool = sqlx::PgPool::connect(&sandbox.database_url).await.unwrap();
    sqlx::query(
        "UPDATE payments.checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = $1",
    )
    .bind(id)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

#[tokio::test]
async fn a_card_order_is_paid_once_on_its_hosted_page_after_a_declined_card() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Card Buyer", "all").await;
    let order = card_order(&sandbox, &agent, "card-order-0001").await;
    let order_id = order["id"].as_str().unwrap();
    let total = order["totalCents"].as_i64().unwrap();
    let hosted_url = order["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    assert!(
        hosted_url.starts_with(&format!("{}/pay/cs_", sandbox.base_url)),
        "{hosted_url}"
    );
    assert!(
        !hosted_url.contains("/api/v1/agent"),
        "served by the site, not the agent API"
    );
    assert!(order["payment"]["checkoutExpiresAt"].is_string());
    assert_eq!(order["payment"]["bankInstructions"], Value::Null);

    let page = open_page(&sandbox, &hosted_url).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.session_status(), "open");
    assert!(page.html.contains(order["orderNumber"].as_str().unwrap()));
    assert!(page.html.contains("BPC-157"), "the page shows the lines");

    let declined = pay_with(&sandbox, &hosted_url, DECLINE_CARD).await;
    assert_eq!(declined.status, 402);
    assert_eq!(declined.outcome(), "declined");
    assert_eq!(
        declined.session_status(),
        "open",
        "a decline leaves the session usable"
    );
    let declined = sandbox.get(&agent.key, &format!("/orders/{order_id}")).await;
    assert_eq!(declined.body["data"]["order"]["paymentState"], "unpaid");

    let paid = pay_with(&sandbox, &hosted_url, SUCCESS_CARD).await;
    assert_eq!(paid.status, 200, "{}", paid.html);
    assert_eq!(paid.outcome(), "paid");
    assert_eq!(paid.session_status(), "completed");
    assert!(
        !paid.html.contains(SUCCESS_CARD),
        "the card number is never echoed"
    );

    // A double click after the first answer: nothing more is charged.
    let again = pay_with(&sandbox, &hosted_url, SUCCESS_CARD).await;
    assert_eq!(again.outcome(), "already_paid");

    wait_for_order(&sandbox, &agent, order_id, "paid").await;
    let invoice_id = order["payment"]["invoiceId"].as_str().unwrap();
    let invoice = sandbox.get(&agent.key, &format!("/invoices/{invoice_id}")).await;
    assert_eq!(invoice.body["data"]["invoice"]["status"], "paid");
    assert_eq!(invoice.body["data"]["invoice"]["previousStatus"], "open");
    assert_eq!(invoice.body["data"]["invoice"]["checkout"]["status"], "completed");
    let payments = card_payments(&sandbox, &agent, invoice_id).await;
    assert_eq!(payments.len(), 1, "{payments:?}");
    assert_eq!(payments[0]["rail"], "card_checkout");
    assert_eq!(payments[0]["status"], "succeeded");
    assert_eq!(payments[0]["amountCents"].as_i64(), Some(total));

    let updates: Vec<_> = stream_events(&sandbox, platform::streams::PAYMENTS)
        .await
        .into_iter()
        .filter_map(|event| match event.data {
            Some(Data::InvoiceUpdated(updated)) if updated.order_id == order_id => Some(updated),
            _ => None,
        })
        .collect();
    assert_eq!(updates.len(), 1, "invoice.updated is emitted exactly once");
    assert_eq!(updates[0].status().as_str(), "paid");
    assert_eq!(updates[0].previous_status().as_str(), "open");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn two_tabs_paying_at_once_settle_the_invoice_exactly_once() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Two Tabs", "all").await;
    let order = card_order(&sandbox, &agent, "card-tabs-0001").await;
    let hosted_url = order["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    let attempts = (0..6).map(|_| pay_with(&sandbox, &hosted_url, SUCCESS_CARD));
    let pages = futures::future::join_all(attempts).await;
    let outcomes: Vec<&str> = pages.iter().map(Page::outcome).collect();
    assert_eq!(
        outcomes.iter().filter(|outcome| **outcome == "paid").count(),
        1,
        "{outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .all(|outcome| *outcome == "paid" || *outcome == "already_paid"),
        "{outcomes:?}"
    );
    let invoice_id = order["payment"]["invoiceId"].as_str().unwrap();
    assert_eq!(card_payments(&sandbox, &agent, invoice_id).await.len(), 1);
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn each_decline_card_names_its_reason_and_the_authentication_card_pays_after_its_confirm_step() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Card Cases", "all").await;
    let order = card_order(&sandbox, &agent, "card-cases-0001").await;
    let hosted_url = order["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    for (card, reason) in [
        ("4000000000009995", "insufficient funds"),
        ("4000000000000069", "expired"),
    ] {
        let page = pay_with(&sandbox, &hosted_url, card).await;
        assert_eq!(page.outcome(), "declined", "{card}");
        assert!(page.html.contains(reason), "{card}: {}", page.html);
    }
    let unknown = pay_with(&sandbox, &hosted_url, "4111111111111111").await;
    assert_eq!(unknown.status, 400);
    assert!(!unknown.html.contains("4111111111111111"));

    let challenged = pay_with(&sandbox, &hosted_url, "4000002500003155").await;
    assert_eq!(challenged.outcome(), "requires_confirmation");
    assert!(challenged.html.contains("id=\"confirm-button\""));
    let cancelled = submit(
        &sandbox,
        &format!("{hosted_url}/confirm"),
        &[("action", "cancel")],
    )
    .await;
    assert_eq!(cancelled.outcome(), "declined");
    assert_eq!(cancelled.session_status(), "open");

    pay_with(&sandbox, &hosted_url, "4000002500003155").await;
    let confirmed = submit(
        &sandbox,
        &format!("{hosted_url}/confirm"),
        &[("action", "approve")],
    )
    .await;
    assert_eq!(confirmed.outcome(), "paid", "{}", confirmed.html);
    wait_for_order(&sandbox, &agent, order["id"].as_str().unwrap(), "paid").await;
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn a_saved_card_pays_a_later_order_of_the_same_customer_only() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Saved Card", "all").await;
    let other = sandbox.customer("Other Saver", "all").await;
    let first = card_order(&sandbox, &agent, "card-saved-0001").await;
    let first_url = first["payment"]["hostedUrl"].as_str().unwrap();
    let saved = submit(
        &sandbox,
        first_url,
        &[
            ("card_number", SUCCESS_CARD),
            ("exp_month", "12"),
            ("exp_year", "2034"),
            ("cvc", "123"),
            ("save_card", "on"),
        ],
    )
    .await;
    assert_eq!(saved.outcome(), "paid");

    let second = card_order(&sandbox, &agent, "card-saved-0002").await;
    let second_url = second["payment"]["hostedUrl"].as_str().unwrap();
    let page = open_page(&sandbox, second_url).await;
    assert!(page.html.contains("ending 4242"), "{}", page.html);
    let token = attribute(&page.html, "name=\"saved_card\" value").to_owned();
    assert!(token.starts_with("pm_sandbox_"), "{token}");
    let paid = submit(&sandbox, second_url, &[("saved_card", &token)]).await;
    assert_eq!(paid.outcome(), "paid", "{}", paid.html);

    // Another customer's page offers no saved card, and the token does not pay it.
    let theirs = card_order(&sandbox, &other, "card-saved-0003").await;
    let their_url = theirs["payment"]["hostedUrl"].as_str().unwrap();
    assert!(!open_page(&sandbox, their_url).await.html.contains("ending 4242"));
    let refused = submit(&sandbox, their_url, &[("saved_card", &token)]).await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.session_status(), "open");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn an_expired_link_cannot_be_paid_and_prepare_returns_a_fresh_link_then_the_paid_state() {
    let sandbox = Sandbox::start().await;
    let agent = sandbox.customer("Late Payer", "all").await;
    let order = card_order(&sandbox, &agent, "card-late-0001").await;
    let order_number = order["orderNumber"].as_str().unwrap();
    let old_url = order["payment"]["hostedUrl"].as_str().unwrap().to_owned();

    // While the link is valid, prepare answers the same link.
    let prepare = |key: &'static str| {
        let body = json!({ "orderReference": order_number });
        let sandbox = &sandbox;
        let agent = &agent;
        async move {
            sandbox
                .post(
                    &agent.key,
                    "/payments/prepare",
                    &body,
                    &[("Idempotency-Key", key)],
                )
                .await
        }
    };
    let current = prepare("prepare-late-0001").await;
    assert_eq!(current.status, 200, "{:?}", current.body);
    assert_eq!(current.body["data"]["payment"]["state"], "awaiting_payment");
    assert_eq!(
        current.body["data"]["payment"]["checkout"]["hostedUrl"],
        old_url.as_str()
    );

    expire_session(&sandbox, &old_url).await;
    let late = pay_with(&sandbox, &old_url, SUCCESS_CARD).await;
    assert_eq!(late.status, 410);
    assert_eq!(late.outcome(), "expired");
    assert_eq!(late.session_status(), "expired");

    let fresh = prepare("prepare-late-0002").await;
    assert_eq!(fresh.status, 200, "{:?}", fresh.body);
    let fresh_url = fresh.body["data"]["payment"]["checkout"]["hostedUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(fresh_url, old_url, "a fresh link");
    assert_eq!(fresh.body["data"]["payment"]["checkout"]["status"], "open");
    assert_eq!(
        fresh.body["data"]["payment"]["checkout"]["amountCents"], order["totalCents"],
        "locked to the amount due"
    );
    let replay = prepare("prepare-late-0002").await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.body, fresh.body);
    // The old link stays dead.
    assert_eq!(
        pay_with(&sandbox, &old_url, SUCCESS_CARD).await.outcome(),
        "expired"
    );

    assert_eq!(
        pay_with(&sandbox, &fresh_url, SUCCESS_CARD).await.outcome(),
        "paid"
    );
    wait_for_order(&sandbox, &agent, order["id"].as_str().unwrap(), "paid").await;
    let after = prepare("prepare-late-0003").await;
    assert_eq!(after.body["data"]["payment"]["state"], "paid");
    assert_eq!(after.body["data"]["payment"]["checkout"], Value::Null);
    assert_eq!(after.body["data"]["payment"]["invoice"]["status"], "paid");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn another_customers_checkout_and_payments_are_unreachable() {
    let sandbox = Sandbox::start().await;
    let alice = sandbox.customer("Alice Card", "all").await;
    let mallory = sandbox.customer("Mallory Card", "all").await;
    let order = card_order(&sandbox, &alice, "card-iso-0001").await;
    let hosted_url = order["payment"]["hostedUrl"].as_str().unwrap().to_owned();
    pay_with(&sandbox, &hosted_url, SUCCESS_CARD).await;
    wait_for_order(&sandbox, &alice, order["id"].as_str().unwrap(), "paid").await;

    for reference in [
        order["id"].as_str().unwrap(),
        order["orderNumber"].as_str().unwrap(),
        order["payment"]["invoiceNumber"].as_str().unwrap(),
    ] {
        let answer = sandbox
            .post(
                &mallory.key,
                "/payments/prepare",
                &json!({ "orderReference": reference }),
                &[("Idempotency-Key", &format!("mallory-{reference}"))],
            )
            .await;
        assert_eq!(answer.status, 404, "{reference}: {:?}", answer.body);
        assert_eq!(answer.error_code(), "not_found");
    }
    let payments = sandbox.get(&mallory.key, "/payments").await;
    assert_eq!(payments.body["data"], json!([]));
    let invoice_id = order["payment"]["invoiceId"].as_str().unwrap();
    let invoice = sandbox
        .get(&mallory.key, &format!("/invoices/{invoice_id}"))
        .await;
    assert_eq!(invoice.status, 404);
    // A made-up session id is the same 404 page as no session at all.
    let guessed = open_page(
        &sandbox,
        &format!("{}/pay/cs_{}", sandbox.base_url, "A".repeat(32)),
    )
    .await;
    assert_eq!(guessed.status, 404);
    let garbage = open_page(&sandbox, &format!("{}/pay/nope", sandbox.base_url)).await;
    assert_eq!(garbage.status, 404);
    // Preparing needs payments:write.
    let reader = sandbox.customer("Reader Card", "payments:read").await;
    let refused = sandbox
        .post(
            &reader.key,
            "/payments/prepare",
            &json!({ "orderReference": "ORD-1" }),
            &[("Idempotency-Key", "reader-prepare-1")],
        )
        .await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.error_code(), "insufficient_scope");
    crate::support::assert_order_views_fresh(&sandbox).await;
    sandbox.stop().await;
}

#[tokio::test]
async fn the_pay_link_of_a_card_order_is_shown_only_to_keys_holding_a_payments_scope() {
    let sandbox = Sandbox::start().await;
    let owner = sandbox.customer("Pay Link Owner", "all").await;
    let key = |scopes: &'static str| {
        let sandbox = &sandbox;
        let owner = &owner;
        async move {
            let created = sandbox
                .labctl(&[
                    "keys",
                    "create",
                    "--customer",
                    &owner.id,
                    "--name",
                    scopes,
                    "--scopes",
                    scopes,
                ])
                .await
                .unwrap();
            Customer {
                id: owner.id.clone(),
                key: created["key"].as_str().unwrap().to_owned(),
            }
        }
    };
    let orderer = key("catalog:read,quotes:write,orders:read,orders:write").await;
    let payer = key("orders:read,payments:read").await;

    // The key that placed the order without a payments scope sees no link, however it reads.
    let order = card_order(&sandbox, &orderer, "pay-link-scope-1").await;
    assert!(order["payment"]["hostedUrl"].is_null(), "{order}");
    let reference = order["orderNumber"].as_str().unwrap();
    let read = sandbox.get(&orderer.key, &format!("/orders/{reference}")).await;
    assert_eq!(read.status, 200);
    assert!(
        read.body["data"]["order"]["payment"]["hostedUrl"].is_null(),
        "{:?}",
        read.body
    );
    let listed = sandbox.get(&orderer.key, "/orders").await;
    assert!(
        listed.body["data"][0]["payment"]["hostedUrl"].is_null(),
        "{:?}",
        listed.body
    );
    let tool = sandbox
        .call_tool(&orderer.key, "svc.order.get", json!({ "reference": reference }))
        .await;
    assert!(
        tool["result"]["structuredContent"]["data"]["order"]["payment"]["hostedUrl"].is_null(),
        "{tool}"
    );
    // The rest of the document is untouched.
    assert_eq!(
        read.body["data"]["order"]["payment"]["checkoutExpiresAt"],
        order["payment"]["checkoutExpiresAt"]
    );

    // A key of the same customer holding a payments scope sees the same order's link.
    let read = sandbox.get(&payer.key, &format!("/orders/{reference}")).await;
    let link = read.body["data"]["order"]["payment"]["hostedUrl"]
        .as_str()
        .unwrap_or_default();
    assert!(link.contains("/pay/"), "{:?}", read.body);
    let listed = sandbox.get(&payer.key, "/orders").await;
    assert_eq!(listed.body["data"][0]["payment"]["hostedUrl"], link);
    assert_eq!(open_page(&sandbox, link).await.status, 200);
    sandbox.stop().await;
}
