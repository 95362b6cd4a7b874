//! The COA email: the customer's own COA in force, the recipient's active consent (checked in the
//! transaction that records the email, under the consent's row lock), the per-recipient limit,
//! then SMTP; `sent` and the stored answer in one transaction, or `failed` and a released key.

use super::consent::{self, CoaEmail};
use super::{Notifications, OPERATION_SEND_COA_EMAIL, RATE_WINDOW, UNSUBSCRIBE_PATH, email, repo, token};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Answer, Attempt, IdempotencyKey, Json};
use platform::principal::Principal;
use uuid::Uuid;

impl Notifications {
    /// Emails one of the customer's published COAs to a consenting recipient, once per `key`.
    pub async fn send_coa_email(
        &self,
        principal: &Principal,
        key: IdempotencyKey,
        reference: String,
        recipient: String,
        note: Option<String>,
    ) -> Answer<CoaEmail> {
        let customer_id = match principal.customer() {
            Ok(customer_id) => customer_id,
            Err(error) => return Answer::fresh(Err(error)),
        };
        let call = key.call(customer_id, OPERATION_SEND_COA_EMAIL);
        self.idempotency
            .run(&self.pool, call, &Json, async |attempt| {
                self.send(attempt, customer_id, reference, recipient, note).await
            })
            .await
    }

    async fn send(
        &self,
        attempt: &Attempt<'_, Json>,
        customer_id: Uuid,
        reference: String,
        recipient: String,
        note: Option<String>,
    ) -> Result<CoaEmail, ApiError> {
        let recipient = consent::recipient(&recipient)?;
        let note = consent::note(note)?;
        if reference.trim().is_empty() {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "reference",
                "reference is a COA id or an accession number",
            ));
        }
        let coa = self.results.get_result(customer_id, &reference).await?;
        if coa.status != crate::domain::coa::CoaStatus::Published {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "the COA is {}: only a COA in force is emailed",
                    coa.status.as_str()
                ),
            )
            .with_details(
                serde_json::json!({ "status": coa.status.as_str(), "supersededBy": coa.superseded_by }),
            ));
        }
        let letterhead = self.results.letterhead();
        let verify_url = letterhead.verify_url(&coa);
        let pdf = self.results.document(&coa).await?;
        let recipient_key = consent::recipient_key(&recipient);
        let now = platform::time::now();
        let resumed: Option<Uuid> = attempt.recovery();
        let mut tx = self.pool.begin().await?;
        let consent = repo::lock_active_consent(&mut tx, customer_id, &recipient_key)
            .await?
            .ok_or_else(|| {
                ApiError::field(
                    ErrorCode::ConsentRequired,
                    "recipientEmail",
                    "no active consent of this recipient is on record; record it first (POST /notifications/consents)",
                )
            })?;
        let (count, oldest) =
            repo::recent_emails(&mut tx, customer_id, &recipient_key, now - RATE_WINDOW, resumed).await?;
        if count >= i64::from(self.daily_limit) {
            let retry_after = oldest
                .map(|oldest| (oldest + RATE_WINDOW - now).num_seconds().max(1))
                .unwrap_or(1);
            return Err(ApiError::new(
                ErrorCode::RateLimited,
                format!(
                    "this recipient has had {} COA emails from you in the last 24 hours; retry later",
                    self.daily_limit
                ),
            )
            .with_details(serde_json::json!({
                "policy": "per-recipient",
                "limit": self.daily_limit,
                "retryAfterSeconds": retry_after,
            })));
        }
        let existing = match resumed {
            Some(id) => repo::email(&mut tx, customer_id, id, verify_url.clone()).await?,
            None => None,
        };
        let email = match existing {
            Some(mut earlier) => {
                if earlier.status == "sent" {
                    // The relay accepted it and only the answer was lost: answer it.
                    attempt.complete(&mut tx, &earlier).await?;
                    tx.commit().await?;
                    return Ok(earlier);
                }
                repo::mark_sending(&mut tx, earlier.id, consent.id).await?;
                earlier.consent_id = consent.id;
                earlier
            }
            None => {
                let id = Uuid::now_v7();
                let email = CoaEmail {
                    id,
                    customer_id,
                    coa_id: coa.id,
                    accession_number: coa.accession_number.clone(),
                    consent_id: consent.id,
                    recipient_email: consent.recipient_email.clone(),
                    status: "sending".to_owned(),
                    message_id: format!("<coa-email-{}@results.lab>", id.simple()),
                    verify_url: verify_url.clone(),
                    created_at: now,
                    sent_at: None,
                };
                repo::insert_email(&mut tx, &email, &recipient_key).await?;
                attempt.save_recovery(&mut tx, &email.id).await?;
                email
            }
        };
        tx.commit().await?;
        let unsubscribe_url = format!(
            "{}{UNSUBSCRIBE_PATH}{}",
            letterhead.public_base_url.trim_end_matches('/'),
            self.keys
                .sign(consent.id, now.timestamp() + token::LIFETIME_SECONDS)
        );
        let message = email::CoaEmailContent {
            coa: &coa,
            consent: &consent,
            letterhead,
            message_id: &email.message_id,
            verify_url: &verify_url,
            unsubscribe_url: &unsubscribe_url,
            note: note.as_deref(),
            pdf,
        }
        .into_email();
        let outcome = self.mailer.send(&message).await;
        let finished = platform::time::now();
        let mut tx = self.pool.begin().await?;
        repo::record_outcome(
            &mut tx,
            email.id,
            outcome.as_ref().map(|_| ()).map_err(String::as_str),
            finished,
        )
        .await?;
        match outcome {
            Ok(()) => {
                let sent = CoaEmail {
                    status: "sent".to_owned(),
                    sent_at: Some(finished),
                    ..email
                };
                attempt.complete(&mut tx, &sent).await?;
                tx.commit().await?;
                tracing::info!(email.id = %sent.id, coa.id = %coa.id, "COA emailed");
                Ok(sent)
            }
            Err(error) => {
                tx.commit().await?;
                tracing::warn!(email.id = %email.id, %error, "the COA email failed; nothing was sent");
                Err(attempt.transient(
                    ApiError::new(
                        ErrorCode::ServiceUnavailable,
                        "the mail relay did not accept the email; nothing was sent, retry with the same Idempotency-Key",
                    )
                    .with_details(serde_json::json!({ "emailId": email.id, "status": "failed" })),
                ))
            }
        }
    }
}
