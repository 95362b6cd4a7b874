//! A PSP adapter shaped like Stripe Checkout Sessions.
//!
//! * Open: `POST {api_base}/v1/checkout/sessions` (form-encoded, `Authorization: Bearer <secret
//!   key>`, `Idempotency-Key: <our session id>`) with `mode=payment`, one line of the locked
//!   amount, `client_reference_id` = our session id and `metadata[order_id]`,
//!   `metadata[order_number]`, `metadata[invoice_number]`; the answer's `id` and `url` are kept
//!   and the pay page sends the payer to `url`.
//! * Expire: `POST {api_base}/v1/checkout/sessions/{id}/expire` when our session expires (the
//!   PSP's own minimum lifetime is 30 minutes, longer than a quote's).
//! * Webhooks: header `Stripe-Signature: t=<unix>,v1=<hex hmac-sha256>` over `<t>.<raw body>` with
//!   the endpoint secret; a timestamp more than [`TOLERANCE_SECONDS`] from now is refused (a
//!   replay), as is a signature that does not match (forged). `checkout.session.completed` with
//!   `payment_status = paid` and `checkout.session.async_payment_succeeded` settle;
//!   `checkout.session.expired` expires.
//! * Refund: `POST {api_base}/v1/refunds` (`payment_intent`, `amount`, `metadata[refund_id]`,
//!   `Idempotency-Key: <our refund id>`); `succeeded` settles at once, `pending` waits for the
//!   `refund.updated` (or `charge.refund.updated`) webhook with the refund object.

use super::{
    CardProcessor, Charge, OpenRequest, OpenedSession, RefundOutcome, RefundRequest, WebhookEvent,
    WebhookKind,
};
use crate::domain::checkout::{CardBehaviour, ProcessorKind};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use hmac::{Hmac, Mac};
use platform::error::{ApiError, ErrorCode};
use platform::money::Cents;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use sha2::Sha256;
use std::time::Duration;

/// Largest distance between a webhook's signed timestamp and now (Stripe's default).
pub const TOLERANCE_SECONDS: i64 = 300;
/// Shortest lifetime Stripe accepts for a Checkout Session.
const MIN_PSP_LIFETIME: chrono::Duration = chrono::Duration::minutes(30);

/// Settings of the Stripe adapter.
#[derive(Clone, Debug)]
pub struct StripeSettings {
    /// `https://api.stripe.com`, or a local double in tests.
    pub api_base: String,
    pub secret_key: SecretString,
    /// The webhook endpoint's signing secret (`whsec_…`).
    pub webhook_secret: SecretString,
}

/// The Stripe adapter.
pub struct StripeProcessor {
    settings: StripeSettings,
    http: reqwest::Client,
}

impl StripeProcessor {
    pub fn new(settings: StripeSettings) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()?;
        Ok(Self { settings, http })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.settings.api_base.trim_end_matches('/'))
    }
}

#[derive(Deserialize)]
struct CreatedSession {
    id: String,
    url: Option<String>,
}

fn unavailable(message: impl std::fmt::Display) -> ApiError {
    ApiError::unavailable("card processor", message.to_string())
}

impl CardProcessor for StripeProcessor {
    fn kind(&self) -> ProcessorKind {
        ProcessorKind::Stripe
    }

    fn open<'a>(
        &'a self,
        request: &'a OpenRequest,
    ) -> BoxFuture<'a, Result<Option<OpenedSession>, ApiError>> {
        Box::pin(async move {
            let psp_expiry = request
                .expires_at
                .max(platform::time::now() + MIN_PSP_LIFETIME + chrono::Duration::minutes(1));
            let form: Vec<(&str, String)> = vec![
                ("mode", "payment".to_owned()),
                ("client_reference_id", request.session_id.clone()),
                ("line_items[0][quantity]", "1".to_owned()),
                (
                    "line_items[0][price_data][currency]",
                    request.currency.to_ascii_lowercase(),
                ),
                (
                    "line_items[0][price_data][unit_amount]",
                    request.amount.0.to_string(),
                ),
                (
                    "line_items[0][price_data][product_data][name]",
                    format!("Laboratory order {}", request.order_number),
                ),
                ("metadata[checkout_session]", request.session_id.clone()),
                ("metadata[order_id]", request.order_id.clone()),
                ("metadata[order_number]", request.order_number.clone()),
                ("metadata[invoice_number]", request.invoice_number.clone()),
                ("success_url", format!("{}?result=success", request.return_url)),
                ("cancel_url", request.return_url.clone()),
                ("expires_at", psp_expiry.timestamp().to_string()),
            ];
            let response = self
                .http
                .post(self.url("/v1/checkout/sessions"))
                .bearer_auth(self.settings.secret_key.expose_secret())
                .header("Idempotency-Key", &request.session_id)
                .form(&form)
                .send()
                .await
                .map_err(unavailable)?;
            if !response.status().is_success() {
                return Err(unavailable(format!(
                    "creating a checkout session answered {}",
                    response.status()
                )));
            }
            let created: CreatedSession = response.json().await.map_err(unavailable)?;
            let url = created
                .url
                .ok_or_else(|| unavailable("the checkout session has no url"))?;
            Ok(Some(OpenedSession {
                processor_session_id: created.id,
                url,
            }))
        })
    }

    fn expire<'a>(&'a self, processor_session_id: &'a str) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            let response = self
                .http
                .post(self.url(&format!("/v1/checkout/sessions/{processor_session_id}/expire")))
                .bearer_auth(self.settings.secret_key.expose_secret())
                .send()
                .await
                .map_err(unavailable)?;
            // 400: already complete or expired at the PSP; nothing more to do.
            if response.status().is_success() || response.status() == reqwest::StatusCode::BAD_REQUEST {
                return Ok(());
            }
            Err(unavailable(format!(
                "expiring a session answered {}",
                response.status()
            )))
        })
    }

    fn refund<'a>(&'a self, request: &'a RefundRequest) -> BoxFuture<'a, Result<RefundOutcome, ApiError>> {
        Box::pin(async move {
            let form: Vec<(&str, String)> = vec![
                ("payment_intent", request.payment_reference.clone()),
                ("amount", request.amount.0.to_string()),
                ("reason", "requested_by_customer".to_owned()),
                ("metadata[refund_id]", request.refund_id.clone()),
            ];
            let response = self
                .http
                .post(self.url("/v1/refunds"))
                .bearer_auth(self.settings.secret_key.expose_secret())
                .header("Idempotency-Key", &request.refund_id)
                .form(&form)
                .send()
                .await
                .map_err(unavailable)?;
            let status = response.status();
            if status.is_client_error() && status != reqwest::StatusCode::TOO_MANY_REQUESTS {
                // Refused for good (already refunded in full, disputed, unknown payment).
                let body = response.text().await.unwrap_or_default();
                return Ok(RefundOutcome::Failed {
                    reference: String::new(),
                    reason: format!(
                        "the processor refused the refund ({status}): {}",
                        body.chars().take(300).collect::<String>()
                    ),
                });
            }
            if !status.is_success() {
                return Err(unavailable(format!("creating a refund answered {status}")));
            }
            let refund: RefundObject = response.json().await.map_err(unavailable)?;
            Ok(refund_outcome(refund.id, &refund.status, refund.failure_reason))
        })
    }

    fn charge(&self, _behaviour: CardBehaviour, _authenticated: bool) -> Result<Charge, ApiError> {
        Err(ApiError::new(
            ErrorCode::Conflict,
            "card details are taken on the processor's own page",
        ))
    }

    fn verify_webhook(
        &self,
        payload: &[u8],
        signature: &str,
        now: DateTime<Utc>,
    ) -> Result<WebhookEvent, ApiError> {
        verify_signature(
            payload,
            signature,
            self.settings.webhook_secret.expose_secret().as_bytes(),
            now,
        )?;
        parse_event(payload)
    }
}

fn refused(message: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidSignature, message)
}

/// Verifies a `t=…,v1=…` signature header over `<t>.<payload>` with `secret`: any `v1` may match
/// (a rotated secret signs with both), and `t` must be within [`TOLERANCE_SECONDS`] of `now`.
pub fn verify_signature(
    payload: &[u8],
    header: &str,
    secret: &[u8],
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => candidates.push(value),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or_else(|| refused("the signature header has no timestamp"))?;
    if candidates.is_empty() {
        return Err(refused("the signature header has no v1 signature"));
    }
    let matches = candidates.iter().any(|candidate| {
        let Ok(expected) = hex::decode(candidate) else {
            return false;
        };
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
            return false;
        };
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(payload);
        mac.verify_slice(&expected).is_ok()
    });
    if !matches {
        return Err(refused("the webhook signature does not match"));
    }
    if (now.timestamp() - timestamp).abs() > TOLERANCE_SECONDS {
        return Err(refused("the webhook timestamp is outside the tolerance"));
    }
    Ok(())
}

/// Signs `payload` at `timestamp` as the PSP does: the `Stripe-Signature` header value.
pub fn sign(payload: &[u8], secret: &[u8], timestamp: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("hmac takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    format!("t={timestamp},v1={}", hex::encode(mac.finalize().into_bytes()))
}

#[derive(Deserialize)]
struct Event {
    id: String,
    #[serde(rename = "type")]
    event_type: String,
    data: EventData,
}

/// A refund as the PSP answers it.
#[derive(Deserialize)]
struct RefundObject {
    id: String,
    status: String,
    failure_reason: Option<String>,
}

/// Our reading of a PSP refund status.
fn refund_outcome(reference: String, status: &str, failure_reason: Option<String>) -> RefundOutcome {
    match status {
        "succeeded" => RefundOutcome::Succeeded { reference },
        "failed" | "canceled" => RefundOutcome::Failed {
            reference,
            reason: failure_reason.unwrap_or_else(|| format!("the refund {status}")),
        },
        // pending, requires_action: a webhook tells the end.
        _ => RefundOutcome::Pending { reference },
    }
}

#[derive(Deserialize)]
struct EventData {
    object: SessionObject,
}

/// The event's object: a Checkout Session or a refund (the fields each has).
#[derive(Deserialize)]
struct SessionObject {
    id: String,
    #[serde(default)]
    object: String,
    status: Option<String>,
    #[serde(default)]
    metadata: std::collections::HashMap<String, String>,
    client_reference_id: Option<String>,
    amount_total: Option<i64>,
    currency: Option<String>,
    payment_status: Option<String>,
    payment_intent: Option<String>,
}

/// Parses a verified event body.
fn parse_event(payload: &[u8]) -> Result<WebhookEvent, ApiError> {
    let event: Event = serde_json::from_slice(payload)
        .map_err(|_| ApiError::new(ErrorCode::InvalidBody, "the webhook body is not a checkout event"))?;
    let object = event.data.object;
    let session_id = object.client_reference_id.clone().unwrap_or_default();
    let kind = match event.event_type.as_str() {
        "checkout.session.completed" | "checkout.session.async_payment_succeeded"
            if object.payment_status.as_deref() == Some("paid") =>
        {
            WebhookKind::Paid {
                payment_reference: object.payment_intent.unwrap_or_else(|| object.id.clone()),
                processor_session_id: object.id,
                session_id,
                amount: Cents(object.amount_total.unwrap_or_default()),
                currency: object.currency.unwrap_or_default().to_ascii_uppercase(),
            }
        }
        "checkout.session.expired" => WebhookKind::Expired {
            processor_session_id: object.id,
            session_id,
        },
        "refund.created" | "refund.updated" | "refund.failed" | "charge.refund.updated"
            if object.object == "refund" =>
        {
            WebhookKind::Refund {
                refund_id: object.metadata.get("refund_id").cloned().unwrap_or_default(),
                status: object.status.unwrap_or_default(),
                processor_refund_id: object.id,
            }
        }
        _ => WebhookKind::Other,
    };
    Ok(WebhookEvent {
        id: event.id,
        event_type: event.event_type,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec_test";

    #[test]
    fn a_signature_made_with_the_secret_verifies_and_anything_else_is_refused() {
        let now = Utc::now();
        let body = br#"{"id":"evt_1"}"#;
        let header = sign(body, SECRET, now.timestamp());
        assert!(verify_signature(body, &header, SECRET, now).is_ok());
        let forged = sign(body, b"whsec_other", now.timestamp());
        assert_eq!(
            verify_signature(body, &forged, SECRET, now).unwrap_err().code,
            ErrorCode::InvalidSignature
        );
        assert!(verify_signature(br#"{"id":"evt_2"}"#, &header, SECRET, now).is_err());
        assert!(verify_signature(body, "v1=00", SECRET, now).is_err());
        assert!(verify_signature(body, "t=1", SECRET, now).is_err());
    }

    #[test]
    fn a_replayed_signature_outside_the_tolerance_is_refused() {
        let now = Utc::now();
        let body = br#"{"id":"evt_1"}"#;
        let old = sign(body, SECRET, now.timestamp() - TOLERANCE_SECONDS - 1);
        assert!(verify_signature(body, &old, SECRET, now).is_err());
        let recent = sign(body, SECRET, now.timestamp() - TOLERANCE_SECONDS + 5);
        assert!(verify_signature(body, &recent, SECRET, now).is_ok());
    }

    #[test]
    fn completed_and_expired_sessions_are_told_apart() {
        let completed = serde_json::json!({
            "id": "evt_1", "type": "checkout.session.completed",
            "data": { "object": { "id": "cs_test_1", "client_reference_id": "cs_ours",
                "amount_total": 1234, "currency": "usd", "payment_status": "paid",
                "payment_intent": "pi_1" } }
        });
        let event = parse_event(completed.to_string().as_bytes()).unwrap();
        assert_eq!(
            event.kind,
            WebhookKind::Paid {
                processor_session_id: "cs_test_1".into(),
                session_id: "cs_ours".into(),
                amount: Cents(1234),
                currency: "USD".into(),
                payment_reference: "pi_1".into(),
            }
        );
        let mut unpaid = completed.clone();
        unpaid["data"]["object"]["payment_status"] = "unpaid".into();
        assert_eq!(
            parse_event(unpaid.to_string().as_bytes()).unwrap().kind,
            WebhookKind::Other
        );
        let mut expired = completed;
        expired["type"] = "checkout.session.expired".into();
        assert!(matches!(
            parse_event(expired.to_string().as_bytes()).unwrap().kind,
            WebhookKind::Expired { .. }
        ));
    }

    #[test]
    fn a_refund_update_names_our_refund_and_the_psp_status() {
        let updated = serde_json::json!({
            "id": "evt_2", "type": "refund.updated",
            "data": { "object": { "id": "re_1", "object": "refund", "status": "succeeded",
                "metadata": { "refund_id": "0190-ours" }, "payment_intent": "pi_1" } }
        });
        assert_eq!(
            parse_event(updated.to_string().as_bytes()).unwrap().kind,
            WebhookKind::Refund {
                processor_refund_id: "re_1".into(),
                refund_id: "0190-ours".into(),
                status: "succeeded".into(),
            }
        );
        let mut session = updated.clone();
        session["data"]["object"]["object"] = "checkout.session".into();
        assert_eq!(
            parse_event(session.to_string().as_bytes()).unwrap().kind,
            WebhookKind::Other
        );
    }

    #[test]
    fn psp_refund_statuses_map_to_succeeded_pending_or_failed() {
        assert_eq!(
            refund_outcome("re_1".into(), "succeeded", None),
            RefundOutcome::Succeeded {
                reference: "re_1".into()
            }
        );
        for pending in ["pending", "requires_action"] {
            assert_eq!(
                refund_outcome("re_1".into(), pending, None),
                RefundOutcome::Pending {
                    reference: "re_1".into()
                }
            );
        }
        assert!(matches!(
            refund_outcome("re_1".into(), "failed", Some("expired_or_canceled_card".into())),
            RefundOutcome::Failed { reason, .. } if reason == "expired_or_canceled_card"
        ));
    }
}
