//! NotificationService against a real SMTP server (PyPI `aiosmtpd`): consents recorded, listed
//! and withdrawn per customer; a published COA emailed only to a consenting recipient, once per
//! idempotency key, with its PDF, verify link and RFC 8058 one-click unsubscribe; the
//! per-recipient limit; the unsubscribe token's tamper and expiry checks; a relay that is down.

use crate::helpers::{TestApp, spawn_app_with, unwrap};
use platform::error::{ApiError, ErrorCode};
use platform::testing::smtp::{ParsedEmail, SmtpServer};
use proto::results as pb;
use proto::results::notification_service_client::NotificationServiceClient;
use proto::scopes::{ORDERS_READ, ORDERS_WRITE, RESULTS_READ};
use results_svc::notify::token::UnsubscribeKeys;
use std::time::Duration;
use tonic::transport::Channel;
use uuid::Uuid;

const RECIPIENT: &str = "Buyer@Example.org";

/// results-svc sending through `smtp` with a per-recipient limit of `limit`.
async fn app_with(smtp: &SmtpServer, limit: u32) -> TestApp {
    let url = smtp.url();
    spawn_app_with(move |settings| {
        settings.notifications.mail = platform::mail::MailTransport::Smtp(url);
        settings.notifications.daily_limit = limit;
    })
    .await
}

async fn client(app: &TestApp) -> NotificationServiceClient<Channel> {
    NotificationServiceClient::connect(format!("http://{}", app.addr))
        .await
        .expect("connect to the notification service")
}

/// A token of `customer` holding every scope these rpcs need.
fn token(app: &TestApp, customer: Uuid) -> String {
    app.keys
        .customer(customer, &[RESULTS_READ, ORDERS_READ, ORDERS_WRITE])
}

fn consent_request(recipient: &str) -> pb::RecordConsentRequest {
    pb::RecordConsentRequest {
        recipient_email: recipient.into(),
        consented_by: "Jane Buyer (CRM 4411)".into(),
        consented_at: Some(platform::time::to_timestamp(
            platform::time::now() - chrono::Duration::days(2),
        )),
        text_version: "2026-01".into(),
        mechanism: "web_form".into(),
        evidence_reference: Some("form-submission-991".into()),
    }
}

async fn record_consent(app: &TestApp, customer: Uuid, recipient: &str) -> Result<pb::Consent, ApiError> {
    let mut client = client(app).await;
    let request = platform::grpc::outgoing(consent_request(recipient), &token(app, customer));
    unwrap(client.record_consent(request).await).map(|answer| answer.consent.expect("a consent"))
}

/// Sends `reference` to `recipient` under `key`: (email, replayed).
async fn send(
    app: &TestApp,
    customer: Uuid,
    key: &str,
    reference: &str,
    recipient: &str,
) -> Result<(pb::CoaEmail, bool), ApiError> {
    let mut client = client(app).await;
    let message = pb::SendCoaEmailRequest {
        reference: reference.into(),
        recipient_email: recipient.into(),
        message: Some("Here is the certificate for lot 42.\n<b>Not HTML</b>".into()),
    };
    let request = platform::grpc::outgoing_idempotent(message, &token(app, customer), key);
    let response = client
        .send_coa_email(request)
        .await
        .map_err(|status| ApiError::from_status(&status))?;
    let replayed = response
        .metadata()
        .get(platform::grpc::IDEMPOTENT_REPLAYED)
        .is_some();
    Ok((response.into_inner().email.expect("an email"), replayed))
}

async fn unsubscribe(app: &TestApp, token: &str) -> Result<pb::UnsubscribeResponse, ApiError> {
    let mut client = client(app).await;
    unwrap(
        client
            .unsubscribe(pb::UnsubscribeRequest { token: token.into() })
            .await,
    )
}

/// Waits for `count` messages at the server and returns them parsed.
async fn wait_for_emails(smtp: &SmtpServer, count: usize) -> Vec<ParsedEmail> {
    platform::testing::wait_for(
        "the emails at the SMTP server",
        Duration::from_secs(10),
        || async { (smtp.messages().len() >= count).then_some(()) },
    )
    .await;
    smtp.parsed()
}

/// The token of the `List-Unsubscribe` header.
fn unsubscribe_token(email: &ParsedEmail) -> String {
    let header = email.header("List-Unsubscribe").expect("List-Unsubscribe");
    let url = header.trim_start_matches('<').trim_end_matches('>');
    url.rsplit_once("/api/v1/unsubscribe/")
        .expect("the unsubscribe path")
        .1
        .to_owned()
}

#[tokio::test]
async fn a_published_coa_is_emailed_once_per_key_with_its_pdf_verify_link_and_one_click_unsubscribe() {
    let smtp = SmtpServer::start().await;
    let app = app_with(&smtp, 10).await;
    let customer = Uuid::now_v7();
    let (sample, coa) = app.published(customer).await;
    let consent = record_consent(&app, customer, RECIPIENT).await.unwrap();
    assert_eq!(
        (consent.status.as_str(), consent.mechanism.as_str()),
        ("active", "web_form")
    );

    let (email, replayed) = send(
        &app,
        customer,
        "send-key-0001",
        &sample.accession,
        "buyer@example.org",
    )
    .await
    .unwrap();
    assert!(!replayed);
    assert_eq!(email.status, "sent");
    assert!(email.sent_at.is_some());
    assert_eq!(
        (email.coa_id.as_str(), email.consent_id.as_str()),
        (coa.id.as_str(), consent.id.as_str())
    );
    assert!(
        email
            .verify_url
            .contains(&format!("accession={}", sample.accession)),
        "{}",
        email.verify_url
    );

    let emails = wait_for_emails(&smtp, 1).await;
    assert_eq!(emails.len(), 1);
    let message = &emails[0];
    assert_eq!(
        message.header("To"),
        Some(RECIPIENT),
        "the address as the consent recorded it"
    );
    assert_eq!(message.header("Message-ID"), Some(email.message_id.as_str()));
    assert_eq!(
        message.header("List-Unsubscribe-Post"),
        Some("List-Unsubscribe=One-Click")
    );
    let link = unsubscribe_token(message);
    assert!(
        message.text.contains(&format!("/api/v1/unsubscribe/{link}")),
        "the link in the body too"
    );
    assert!(message.text.contains(&email.verify_url), "{}", message.text);
    assert!(
        message.text.contains("> <b>Not HTML</b>"),
        "the note quoted as plain text"
    );
    assert!(
        !message.content_types.iter().any(|part| part == "text/html"),
        "{:?}",
        message.content_types
    );
    assert_eq!(message.attachments.len(), 1);
    let attachment = &message.attachments[0];
    assert_eq!(attachment.content_type, "application/pdf");
    assert_eq!(attachment.filename, format!("COA-{}-v1.pdf", sample.accession));
    assert!(attachment.bytes.starts_with(b"%PDF"));

    // The same key again: the stored answer, and nothing more reaches the server.
    let (again, replayed) = send(
        &app,
        customer,
        "send-key-0001",
        &sample.accession,
        "buyer@example.org",
    )
    .await
    .unwrap();
    assert!(replayed);
    assert_eq!(again, email);
    platform::testing::holds_for("no second email", Duration::from_millis(500), || async {
        smtp.messages().len() == 1
    })
    .await;
    let other_body = {
        let mut client = client(&app).await;
        let message = pb::SendCoaEmailRequest {
            reference: sample.accession.clone(),
            recipient_email: "buyer@example.org".into(),
            message: None,
        };
        client
            .send_coa_email(platform::grpc::outgoing_idempotent(
                message,
                &token(&app, customer),
                "send-key-0001",
            ))
            .await
            .map_err(|status| ApiError::from_status(&status))
            .unwrap_err()
    };
    assert_eq!(other_body.code, ErrorCode::IdempotencyKeyReused);

    // One click withdraws the consent, once; the next send is refused.
    let first = unsubscribe(&app, &link).await.unwrap();
    assert!(first.withdrawn && !first.unchanged);
    let second = unsubscribe(&app, &link).await.unwrap();
    assert!(second.withdrawn && second.unchanged);
    let refused = send(&app, customer, "send-key-0002", &sample.accession, RECIPIENT)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ConsentRequired);
    let withdrawn: (String,) =
        sqlx::query_as("SELECT withdrawal_mechanism FROM results.recipient_consents WHERE id = $1::uuid")
            .bind(&consent.id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(withdrawn.0, "one_click_unsubscribe");
    assert_eq!(smtp.messages().len(), 1);
}

#[tokio::test]
async fn without_an_active_consent_nothing_is_sent_and_the_same_key_works_once_consent_is_recorded() {
    let smtp = SmtpServer::start().await;
    let app = app_with(&smtp, 10).await;
    let customer = Uuid::now_v7();
    let (sample, _) = app.published(customer).await;

    let refused = send(&app, customer, "send-key-0003", &sample.accession, RECIPIENT)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ConsentRequired);
    assert_eq!(refused.code.http_status(), 409);

    // Another customer's consent for the same address does not count.
    let other = Uuid::now_v7();
    record_consent(&app, other, RECIPIENT).await.unwrap();
    let refused = send(&app, customer, "send-key-0003", &sample.accession, RECIPIENT)
        .await
        .unwrap_err();
    assert_eq!(
        refused.code,
        ErrorCode::ConsentRequired,
        "not replayed as stored: consent may come"
    );

    record_consent(&app, customer, RECIPIENT).await.unwrap();
    let (email, replayed) = send(&app, customer, "send-key-0003", &sample.accession, RECIPIENT)
        .await
        .unwrap();
    assert_eq!((email.status.as_str(), replayed), ("sent", false));
    assert_eq!(wait_for_emails(&smtp, 1).await.len(), 1);
}

#[tokio::test]
async fn another_customers_coa_and_an_unpublished_one_are_not_found_and_nothing_is_sent() {
    let smtp = SmtpServer::start().await;
    let app = app_with(&smtp, 10).await;
    let (owner, intruder) = (Uuid::now_v7(), Uuid::now_v7());
    let (sample, coa) = app.published(owner).await;
    record_consent(&app, intruder, RECIPIENT).await.unwrap();
    for reference in [sample.accession.as_str(), coa.id.as_str(), "ACC-2026-NONE"] {
        let error = send(
            &app,
            intruder,
            &format!("intruder-{reference}"),
            reference,
            RECIPIENT,
        )
        .await
        .unwrap_err();
        assert_eq!(error.code, ErrorCode::NotFound, "{reference}");
    }
    let unpublished = app.sample_in_testing(intruder).await;
    let error = send(
        &app,
        intruder,
        "intruder-draft",
        &unpublished.accession,
        RECIPIENT,
    )
    .await
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound);
    platform::testing::nothing_more_arrives("no email", Duration::from_millis(300), || async {
        smtp.messages().len()
    })
    .await;
}

#[tokio::test]
async fn the_per_recipient_limit_answers_rate_limited_with_retry_after_counting_addresses_without_case() {
    let smtp = SmtpServer::start().await;
    let app = app_with(&smtp, 2).await;
    let customer = Uuid::now_v7();
    let (sample, _) = app.published(customer).await;
    record_consent(&app, customer, RECIPIENT).await.unwrap();
    send(
        &app,
        customer,
        "limit-key-1",
        &sample.accession,
        "buyer@example.org",
    )
    .await
    .unwrap();
    send(
        &app,
        customer,
        "limit-key-2",
        &sample.accession,
        "BUYER@EXAMPLE.ORG",
    )
    .await
    .unwrap();
    let limited = send(&app, customer, "limit-key-3", &sample.accession, RECIPIENT)
        .await
        .unwrap_err();
    assert_eq!(limited.code, ErrorCode::RateLimited);
    let retry_after = limited.retry_after_seconds().expect("retryAfterSeconds");
    assert!((86_000..=86_400).contains(&retry_after), "{retry_after}");
    assert_eq!(limited.details.as_ref().unwrap()["policy"], "per-recipient");
    assert_eq!(wait_for_emails(&smtp, 2).await.len(), 2);

    // Another recipient of the same customer has its own allowance.
    record_consent(&app, customer, "other@example.org").await.unwrap();
    send(
        &app,
        customer,
        "limit-key-4",
        &sample.accession,
        "other@example.org",
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_tampered_foreign_or_expired_unsubscribe_token_is_refused_and_changes_nothing() {
    let smtp = SmtpServer::start().await;
    let app = app_with(&smtp, 10).await;
    let customer = Uuid::now_v7();
    let consent = record_consent(&app, customer, RECIPIENT).await.unwrap();
    let consent_id = Uuid::parse_str(&consent.id).unwrap();
    let keys = UnsubscribeKeys::new(results_svc::DEVELOPMENT_UNSUBSCRIBE_KEY.as_bytes());
    let now = platform::time::now().timestamp();
    let valid = keys.sign(consent_id, now + 3600);
    let expired = keys.sign(consent_id, now - 1);
    let foreign = UnsubscribeKeys::new(b"not the key of this deployment at all").sign(consent_id, now + 3600);
    let altered = valid.replacen(&format!(".{}.", now + 3600), &format!(".{}.", now + 7200), 1);
    let other_consent = keys.sign(Uuid::now_v7(), now + 3600);
    for token in [
        &expired,
        &foreign,
        &altered,
        &other_consent,
        &"garbage".to_owned(),
    ] {
        let error = unsubscribe(&app, token).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::NotFound, "{token}");
        let mut client = client(&app).await;
        let checked = client
            .check_unsubscribe(pb::CheckUnsubscribeRequest { token: token.clone() })
            .await
            .unwrap_err();
        assert_eq!(checked.code(), tonic::Code::NotFound);
    }
    let still: (Option<chrono::DateTime<chrono::Utc>>,) =
        sqlx::query_as("SELECT withdrawn_at FROM results.recipient_consents WHERE id = $1")
            .bind(consent_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(still.0, None, "nothing changed");

    let mut client = client(&app).await;
    let checked = client
        .check_unsubscribe(pb::CheckUnsubscribeRequest { token: valid.clone() })
        .await
        .unwrap()
        .into_inner();
    assert!(!checked.withdrawn, "checking withdraws nothing");
    assert!(unsubscribe(&app, &valid).await.unwrap().withdrawn);
}

#[tokio::test]
async fn one_active_consent_per_recipient_withdrawn_only_by_its_customer_and_not_re_recorded_from_before_an_unsubscribe()
 {
    let smtp = SmtpServer::start().await;
    let app = app_with(&smtp, 10).await;
    let (customer, other) = (Uuid::now_v7(), Uuid::now_v7());
    let consent = record_consent(&app, customer, RECIPIENT).await.unwrap();
    let second = record_consent(&app, customer, "BUYER@example.org")
        .await
        .unwrap_err();
    assert_eq!(second.code, ErrorCode::Conflict);
    assert_eq!(second.details.as_ref().unwrap()["consentId"], consent.id.as_str());
    let invalid = {
        let mut client = client(&app).await;
        let mut request = consent_request(RECIPIENT);
        request.mechanism = "assumed".into();
        unwrap(
            client
                .record_consent(platform::grpc::outgoing(request, &token(&app, customer)))
                .await,
        )
        .unwrap_err()
    };
    assert_eq!(invalid.code, ErrorCode::InvalidRequest);
    assert_eq!(invalid.details.as_ref().unwrap()["field"], "mechanism");

    // The other customer sees none of it and cannot withdraw it.
    let client = client(&app).await;
    let list = |customer: Uuid, status: Option<&str>| {
        let mut client = client.clone();
        let request = pb::ListConsentsRequest {
            recipient_email: Some("buyer@EXAMPLE.org".into()),
            status: status.map(str::to_owned),
            limit: None,
            cursor: None,
        };
        let token = token(&app, customer);
        async move {
            unwrap(
                client
                    .list_consents(platform::grpc::outgoing(request, &token))
                    .await,
            )
            .unwrap()
            .consents
        }
    };
    assert_eq!(list(other, None).await.len(), 0);
    assert_eq!(list(customer, Some("active")).await.len(), 1);
    let foreign = unwrap(
        client
            .clone()
            .withdraw_consent(platform::grpc::outgoing(
                pb::WithdrawConsentRequest {
                    consent_id: consent.id.clone(),
                },
                &token(&app, other),
            ))
            .await,
    )
    .unwrap_err();
    assert_eq!(foreign.code, ErrorCode::NotFound);

    // The recipient unsubscribes; a consent dated before that is refused, a newer one accepted.
    let keys = UnsubscribeKeys::new(results_svc::DEVELOPMENT_UNSUBSCRIBE_KEY.as_bytes());
    let link = keys.sign(
        Uuid::parse_str(&consent.id).unwrap(),
        platform::time::now().timestamp() + 60,
    );
    unsubscribe(&app, &link).await.unwrap();
    assert_eq!(list(customer, Some("withdrawn")).await.len(), 1);
    let stale = record_consent(&app, customer, RECIPIENT).await.unwrap_err();
    assert_eq!(stale.code, ErrorCode::Conflict);
    assert_eq!(stale.details.as_ref().unwrap()["field"], "consentedAt");
    let mut fresh = consent_request(RECIPIENT);
    fresh.consented_at = Some(platform::time::to_timestamp(platform::time::now()));
    let renewed = unwrap(
        client
            .clone()
            .record_consent(platform::grpc::outgoing(fresh, &token(&app, customer)))
            .await,
    )
    .unwrap()
    .consent
    .unwrap();
    assert_eq!(renewed.status, "active");

    // The customer withdraws it through the API, once.
    let withdraw = |consent_id: String| {
        let mut client = client.clone();
        let token = token(&app, customer);
        async move {
            unwrap(
                client
                    .withdraw_consent(platform::grpc::outgoing(
                        pb::WithdrawConsentRequest { consent_id },
                        &token,
                    ))
                    .await,
            )
            .unwrap()
        }
    };
    let first = withdraw(renewed.id.clone()).await;
    assert_eq!(
        (
            first.unchanged,
            first.consent.unwrap().withdrawal_mechanism.as_deref()
        ),
        (false, Some("customer_request"))
    );
    assert!(withdraw(renewed.id.clone()).await.unchanged);
}

#[tokio::test]
async fn a_relay_that_is_down_records_a_failed_email_answers_503_and_the_same_key_sends_it_once_it_is_back() {
    let smtp = SmtpServer::start().await;
    let port = smtp.port;
    let app = app_with(&smtp, 10).await;
    drop(smtp);
    let customer = Uuid::now_v7();
    let (sample, _) = app.published(customer).await;
    record_consent(&app, customer, RECIPIENT).await.unwrap();

    let down = send(&app, customer, "relay-key-1", &sample.accession, RECIPIENT)
        .await
        .unwrap_err();
    assert_eq!(down.code, ErrorCode::ServiceUnavailable);
    let details = down.details.clone().unwrap();
    assert_eq!(details["status"], "failed");
    let recorded: (String, Option<String>) =
        sqlx::query_as("SELECT status, last_error FROM results.coa_emails WHERE id = $1::uuid")
            .bind(details["emailId"].as_str().unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(recorded.0, "failed");
    assert!(recorded.1.is_some());

    let smtp = SmtpServer::start_on(port).await;
    let (email, replayed) = send(&app, customer, "relay-key-1", &sample.accession, RECIPIENT)
        .await
        .unwrap();
    assert_eq!((email.status.as_str(), replayed), ("sent", false));
    assert_eq!(
        email.id,
        details["emailId"].as_str().unwrap(),
        "the same email, resumed"
    );
    let emails = wait_for_emails(&smtp, 1).await;
    assert_eq!(emails.len(), 1);
    assert_eq!(emails[0].header("Message-ID"), Some(email.message_id.as_str()));
}
