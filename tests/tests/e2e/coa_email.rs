//! The consent-gated COA email through the whole mesh (docs/notifications.md): the agent records
//! its end customer's consent and sends a published COA over REST; exactly one email reaches a
//! real SMTP server (PyPI `aiosmtpd`) with the PDF, the verify link and the RFC 8058 headers; the
//! same key sends nothing more; the recipient's one-click POST withdraws the consent (a GET only
//! shows the page); the next send, over MCP, is refused `consent_required`; another customer's
//! COA is 404.

use crate::lab_support::{approve_and_publish, lab_staff, pay, receive_and_start, record_and_submit};
use crate::support::bank_order;
use platform::testing::smtp::ParsedEmail;
use serde_json::{Value, json};
use std::time::Duration;
use tests::smtp::SmtpServer;
use tests::{Customer, Sandbox};

const RECIPIENT: &str = "buyer@example.org";

/// A published COA of one bank order of `agent`: its accession number.
async fn published_coa(sandbox: &Sandbox, agent: &Customer, key: &str) -> String {
    let staff = lab_staff(sandbox).await;
    let (order_id, invoice, total) = bank_order(sandbox, agent, key).await;
    pay(sandbox, &invoice, &total, &format!("PAY-{key}")).await;
    let samples = receive_and_start(sandbox, &staff, &order_id, 1).await;
    let accession = samples[0]["accessionNumber"].as_str().unwrap().to_owned();
    record_and_submit(sandbox, &staff, &samples[0]).await;
    approve_and_publish(sandbox, &staff, &accession).await;
    accession
}

fn consent_body(consented_at: chrono::DateTime<chrono::Utc>) -> Value {
    json!({
        "recipientEmail": RECIPIENT,
        "consentedBy": "Jane Buyer (CRM 4411)",
        "consentedAt": consented_at.to_rfc3339(),
        "textVersion": "2026-01",
        "mechanism": "web_form",
        "evidenceReference": "form-submission-991",
    })
}

async fn wait_for_emails(smtp: &SmtpServer, count: usize) -> Vec<ParsedEmail> {
    platform::testing::wait_for(
        "the emails at the SMTP server",
        Duration::from_secs(20),
        || async { (smtp.messages().len() >= count).then_some(()) },
    )
    .await;
    smtp.parsed()
}

#[tokio::test]
async fn a_coa_emailed_with_consent_reaches_the_recipient_once_and_one_click_unsubscribe_stops_the_next() {
    let smtp = SmtpServer::start().await;
    let smtp_url = smtp.url();
    let sandbox = Sandbox::start_with(|settings| {
        settings.results.notifications.mail = platform::mail::MailTransport::Smtp(smtp_url);
    })
    .await;
    let agent = sandbox.customer("Mailing Mira", "all").await;
    let intruder = sandbox.customer("Mailing Intruder", "all").await;
    let accession = published_coa(&sandbox, &agent, "mail-order-0001").await;

    // Without consent on record: refused, nothing sent.
    let send = json!({ "reference": accession, "recipientEmail": RECIPIENT, "message": "Your COA for lot 42.\n<b>plain</b>" });
    let refused = sandbox
        .post(
            &agent.key,
            "/notifications/customer-coa",
            &send,
            &[("Idempotency-Key", "mail-send-0000")],
        )
        .await;
    assert_eq!(
        (refused.status, refused.error_code()),
        (409, "consent_required"),
        "{:?}",
        refused.body
    );
    let keyless = sandbox
        .post(&agent.key, "/notifications/customer-coa", &send, &[])
        .await;
    assert_eq!(
        (keyless.status, keyless.error_code()),
        (400, "idempotency_key_missing")
    );

    let now = platform::time::now();
    let recorded = sandbox
        .post(
            &agent.key,
            "/notifications/consents",
            &consent_body(now - chrono::Duration::days(3)),
            &[("Idempotency-Key", "mail-consent-0001")],
        )
        .await;
    assert_eq!(recorded.status, 201, "{:?}", recorded.body);
    let consent = &recorded.body["data"]["consent"];
    assert_eq!(
        (consent["status"].as_str(), consent["mechanism"].as_str()),
        (Some("active"), Some("web_form"))
    );
    let consent_id = consent["id"].as_str().unwrap().to_owned();

    // Another customer can neither send this COA nor see the consent.
    sandbox
        .post(&intruder.key, "/notifications/consents", &consent_body(now), &[])
        .await;
    let foreign = sandbox
        .post(
            &intruder.key,
            "/notifications/customer-coa",
            &send,
            &[("Idempotency-Key", "mail-send-0009")],
        )
        .await;
    assert_eq!((foreign.status, foreign.error_code()), (404, "not_found"));
    let listed = sandbox.get(&intruder.key, "/notifications/consents").await;
    assert!(
        listed.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != consent_id.as_str())
    );
    let withdraw_foreign = sandbox
        .post(
            &intruder.key,
            &format!("/notifications/consents/{consent_id}/withdraw"),
            &json!({}),
            &[],
        )
        .await;
    assert_eq!(withdraw_foreign.status, 404);

    // The send: one email, with the PDF, the verify link and the one-click unsubscribe.
    let sent = sandbox
        .post(
            &agent.key,
            "/notifications/customer-coa",
            &send,
            &[("Idempotency-Key", "mail-send-0001")],
        )
        .await;
    assert_eq!(sent.status, 201, "{:?}", sent.body);
    let email = sent.body["data"]["email"].clone();
    assert_eq!(email["status"], "sent");
    assert_eq!(email["consentId"], consent_id.as_str());
    let verify_url = email["verifyUrl"].as_str().unwrap().to_owned();
    assert!(verify_url.starts_with(&format!(
        "{}/api/v1/agent/verify?accession={accession}",
        sandbox.base_url
    )));
    let emails = wait_for_emails(&smtp, 1).await;
    assert_eq!(emails.len(), 1);
    let message = &emails[0];
    assert_eq!(message.header("To"), Some(RECIPIENT));
    assert_eq!(
        message.header("List-Unsubscribe-Post"),
        Some("List-Unsubscribe=One-Click")
    );
    let unsubscribe_url = message
        .header("List-Unsubscribe")
        .unwrap()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_owned();
    assert!(
        unsubscribe_url.starts_with(&format!("{}/api/v1/unsubscribe/", sandbox.base_url)),
        "{unsubscribe_url}"
    );
    assert!(
        message.text.contains(&unsubscribe_url),
        "the link is in the body too"
    );
    assert!(message.text.contains(&verify_url));
    assert!(message.text.contains("> <b>plain</b>"));
    assert!(!message.content_types.iter().any(|part| part == "text/html"));
    assert_eq!(message.attachments.len(), 1);
    assert_eq!(message.attachments[0].content_type, "application/pdf");
    assert!(message.attachments[0].bytes.starts_with(b"%PDF-"));
    // The verify link works for the recipient, without a key.
    let verified = sandbox.http.get(&verify_url).send().await.unwrap();
    assert_eq!(verified.status(), 200);
    let verified: Value = verified.json().await.unwrap();
    assert_eq!(verified["data"]["verification"]["status"], "authentic");

    // A replay answers the same email and sends nothing.
    let replay = sandbox
        .post(
            &agent.key,
            "/notifications/customer-coa",
            &send,
            &[("Idempotency-Key", "mail-send-0001")],
        )
        .await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.body["data"]["email"], email);
    platform::testing::holds_for("no second email", Duration::from_millis(700), || async {
        smtp.messages().len() == 1
    })
    .await;

    // A GET (a mail scanner's prefetch) shows the page and withdraws nothing.
    let page = sandbox.http.get(&unsubscribe_url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["cache-control"], "no-store");
    let html = page.text().await.unwrap();
    assert!(
        html.contains("<form method=\"post\">") && html.contains("name=\"List-Unsubscribe\""),
        "{html}"
    );
    let active = sandbox
        .get(&agent.key, "/notifications/consents?status=active")
        .await;
    assert_eq!(active.body["data"].as_array().unwrap().len(), 1);
    // A tampered token changes nothing.
    let (head, signature) = unsubscribe_url.rsplit_once('.').unwrap();
    let tampered = format!("{head}.{}", signature.chars().rev().collect::<String>());
    let one_click = |url: String| {
        let http = sandbox.http.clone();
        async move {
            http.post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body("List-Unsubscribe=One-Click")
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(one_click(tampered).await, 404);
    assert_eq!(
        sandbox
            .get(&agent.key, "/notifications/consents?status=active")
            .await
            .body["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The one-click POST, as a mail client sends it (no key): withdrawn, once.
    assert_eq!(one_click(unsubscribe_url.clone()).await, 200);
    assert_eq!(
        one_click(unsubscribe_url.clone()).await,
        200,
        "a repeat is harmless"
    );
    let withdrawn = sandbox.get(&agent.key, "/notifications/consents").await;
    let withdrawn = &withdrawn.body["data"][0];
    assert_eq!(withdrawn["status"], "withdrawn");
    assert_eq!(withdrawn["withdrawalMechanism"], "one_click_unsubscribe");

    // Over MCP now: the next send is refused, and nothing more reaches the server.
    let refused = sandbox
        .call_tool(
            &agent.key,
            "svc.notification.coa.send",
            json!({ "reference": accession, "recipientEmail": RECIPIENT, "idempotencyKey": "mail-send-0002" }),
        )
        .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["code"], "consent_required",
        "{refused}"
    );
    // A consent dated before the unsubscribe is refused; one given afterwards is accepted, and
    // the email goes out again (through MCP).
    let stale = sandbox
        .call_tool(
            &agent.key,
            "svc.notification.consent.record",
            consent_body(now - chrono::Duration::days(1)),
        )
        .await;
    assert_eq!(
        stale["result"]["structuredContent"]["error"]["code"], "conflict",
        "{stale}"
    );
    let renewed = sandbox
        .call_tool(
            &agent.key,
            "svc.notification.consent.record",
            consent_body(platform::time::now()),
        )
        .await;
    assert_eq!(
        renewed["result"]["structuredContent"]["data"]["consent"]["status"], "active",
        "{renewed}"
    );
    let again = sandbox
        .call_tool(
            &agent.key,
            "svc.notification.coa.send",
            json!({ "reference": accession, "recipientEmail": RECIPIENT, "idempotencyKey": "mail-send-0003" }),
        )
        .await;
    assert_eq!(
        again["result"]["structuredContent"]["data"]["email"]["status"], "sent",
        "{again}"
    );
    assert_eq!(wait_for_emails(&smtp, 2).await.len(), 2);
    sandbox.stop().await;
}
