//! Customer notifications (docs/notifications.md): the consent a customer records for its own end
//! customer's address, and the consent-gated email of a published COA to that address.
//!
//! Send: claim the key → validate → the customer's own COA in force (else `not_found` /
//! `conflict`) and its PDF → one transaction holding the recipient's active consent row lock
//! (none: `consent_required`): the per-recipient limit (`rate_limited`), the email row `sending`
//! and its id as the recovery point → SMTP → one transaction: `sent` and the stored answer, or
//! `failed` (503, the claim released; a retry with the same key resumes the same row and
//! Message-ID after checking consent again). Unsubscribe: a signed token names the consent,
//! withdrawn once (`one_click_unsubscribe`).

pub mod consent;
pub mod email;
pub mod repo;
pub mod token;

use crate::service::ResultsService;
use chrono::Duration;
use consent::{CoaEmail, Consent, ConsentInput, NewConsent, WITHDRAWN_BY_CUSTOMER, WITHDRAWN_BY_ONE_CLICK};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Answer, Attempt, IdempotencyKey, IdempotencyStore, Json};
use platform::mail::Mailer;
use platform::pagination::{After, Listing, Page, PageRequest};
use platform::principal::Principal;
use repo::ConsentFilter;
use sqlx::PgPool;
use std::sync::Arc;
use token::UnsubscribeKeys;
use uuid::Uuid;

/// Idempotency operation name of RecordConsent.
pub const OPERATION_RECORD_CONSENT: &str = "notifications.record_consent";
/// Idempotency operation name of SendCoaEmail.
pub const OPERATION_SEND_COA_EMAIL: &str = "notifications.send_coa_email";
/// The listing of a customer's consents, newest recorded first.
pub const CONSENTS: Listing = Listing::new("recipient_consents");
/// The window of the per-recipient limit.
pub const RATE_WINDOW: Duration = Duration::hours(24);
/// Path of the public unsubscribe link under the site root; the token follows.
pub const UNSUBSCRIBE_PATH: &str = "/api/v1/unsubscribe/";

/// The notification use cases and what they need.
#[derive(Clone)]
pub struct Notifications {
    pool: PgPool,
    results: Arc<ResultsService>,
    mailer: Mailer,
    keys: UnsubscribeKeys,
    /// COA emails per customer and recipient in any 24 hours.
    daily_limit: u32,
    idempotency: IdempotencyStore,
}

/// The outcome of an unsubscribe link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unsubscribed {
    /// The consent is withdrawn (now or before).
    pub withdrawn: bool,
    /// It was withdrawn before this call.
    pub unchanged: bool,
}

impl Notifications {
    pub fn new(
        pool: PgPool,
        results: Arc<ResultsService>,
        mailer: Mailer,
        keys: UnsubscribeKeys,
        daily_limit: u32,
    ) -> Self {
        // The claim outlives the SMTP conversation (lettre's own timeout is a minute), so a retry
        // never takes over a send that is still talking to the relay.
        let idempotency = IdempotencyStore::new(crate::SCHEMA).with_timing(
            std::time::Duration::from_secs(120),
            std::time::Duration::from_secs(10),
        );
        Self {
            pool,
            results,
            mailer,
            keys,
            daily_limit,
            idempotency,
        }
    }

    /// Records a consent for the principal's customer, under `key` when there is one.
    pub async fn record_consent(
        &self,
        principal: &Principal,
        key: Option<IdempotencyKey>,
        input: ConsentInput,
    ) -> Answer<Consent> {
        let customer_id = match principal.customer() {
            Ok(customer_id) => customer_id,
            Err(error) => return Answer::fresh(Err(error)),
        };
        let work = async |attempt: Option<&Attempt<'_, Json>>| {
            let now = platform::time::now();
            let consent = NewConsent::validate(input, now)?;
            let recipient_key = consent::recipient_key(&consent.recipient_email);
            let mut tx = self.pool.begin().await?;
            if let Some(active) = repo::lock_active_consent(&mut tx, customer_id, &recipient_key).await? {
                return Err(second_consent(Some(active.id)));
            }
            if let Some(unsubscribed) = repo::last_unsubscribe(&mut tx, customer_id, &recipient_key).await?
                && consent.consented_at <= unsubscribed
            {
                return Err(ApiError::field(
                    ErrorCode::Conflict,
                    "consentedAt",
                    "the recipient unsubscribed after this consent was given; record a consent given after the unsubscribe",
                )
                .with_details(serde_json::json!({ "unsubscribedAt": unsubscribed.to_rfc3339() })));
            }
            let recorded = repo::insert_consent(
                &mut tx,
                Uuid::now_v7(),
                customer_id,
                &consent,
                &recipient_key,
                now,
            )
            .await
            .map_err(|error| {
                if repo::is_second_active_consent(&error) {
                    second_consent(None)
                } else {
                    ApiError::from(error)
                }
            })?;
            if let Some(attempt) = attempt {
                attempt.complete(&mut tx, &recorded).await?;
            }
            tx.commit().await?;
            tracing::info!(consent.id = %recorded.id, "recipient consent recorded");
            Ok(recorded)
        };
        match key {
            None => Answer::fresh(work(None).await),
            Some(key) => {
                let call = key.call(customer_id, OPERATION_RECORD_CONSENT);
                self.idempotency
                    .run(&self.pool, call, &Json, async |attempt| work(Some(attempt)).await)
                    .await
            }
        }
    }

    /// One page of the customer's consents, newest recorded first.
    pub async fn list_consents(
        &self,
        customer_id: Uuid,
        recipient: Option<String>,
        status: Option<String>,
        page: &PageRequest,
    ) -> Result<Page<Consent>, ApiError> {
        let active = match status.as_deref() {
            None | Some("") => None,
            Some("active") => Some(true),
            Some("withdrawn") => Some(false),
            Some(_) => {
                return Err(ApiError::field(
                    ErrorCode::InvalidRequest,
                    "status",
                    "status is active or withdrawn",
                ));
            }
        };
        let after: Option<After> = CONSENTS.after(page)?;
        let filter = ConsentFilter {
            recipient_key: recipient
                .filter(|r| !r.trim().is_empty())
                .map(|r| consent::recipient_key(&r)),
            active,
            after: after.map(|after| (after.created_at, after.id)),
            limit: page.fetch(),
        };
        let mut conn = self.pool.acquire().await?;
        let consents = repo::list_consents(&mut conn, customer_id, &filter).await?;
        Ok(CONSENTS.page(page, consents, |consent| {
            After::new(consent.recorded_at, consent.id)
        }))
    }

    /// Withdraws one of the customer's consents (`customer_request`); (consent, unchanged).
    pub async fn withdraw_consent(
        &self,
        customer_id: Uuid,
        consent_id: &str,
    ) -> Result<(Consent, bool), ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "consent not found");
        let id = Uuid::try_parse(consent_id.trim()).map_err(|_| not_found())?;
        let mut tx = self.pool.begin().await?;
        let found = repo::lock_consent(&mut tx, Some(customer_id), id)
            .await?
            .ok_or_else(not_found)?;
        if found.withdrawn_at.is_some() {
            return Ok((found, true));
        }
        let withdrawn = repo::withdraw(&mut tx, id, WITHDRAWN_BY_CUSTOMER, platform::time::now()).await?;
        tx.commit().await?;
        tracing::info!(consent.id = %id, "recipient consent withdrawn by the customer");
        Ok((withdrawn, false))
    }

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
                earlier.recipient_email = recipient.clone();
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

    /// Whether an unsubscribe token is valid and its consent already withdrawn; changes nothing.
    pub async fn check_unsubscribe(&self, token: &str) -> Result<bool, ApiError> {
        let id = self.token_consent(token)?;
        let mut conn = self.pool.acquire().await?;
        let consent = repo::consent(&mut conn, id).await?.ok_or_else(link_not_valid)?;
        Ok(consent.withdrawn_at.is_some())
    }

    /// Withdraws the consent an unsubscribe token names (`one_click_unsubscribe`), once.
    pub async fn unsubscribe(&self, token: &str) -> Result<Unsubscribed, ApiError> {
        let id = self.token_consent(token)?;
        let mut tx = self.pool.begin().await?;
        let consent = repo::lock_consent(&mut tx, None, id)
            .await?
            .ok_or_else(link_not_valid)?;
        if consent.withdrawn_at.is_some() {
            return Ok(Unsubscribed {
                withdrawn: true,
                unchanged: true,
            });
        }
        repo::withdraw(&mut tx, id, WITHDRAWN_BY_ONE_CLICK, platform::time::now()).await?;
        tx.commit().await?;
        tracing::info!(consent.id = %id, "recipient unsubscribed through the one-click link");
        Ok(Unsubscribed {
            withdrawn: true,
            unchanged: false,
        })
    }

    fn token_consent(&self, token: &str) -> Result<Uuid, ApiError> {
        self.keys
            .verify(token, platform::time::now().timestamp())
            .ok_or_else(link_not_valid)
    }
}

fn second_consent(existing: Option<Uuid>) -> ApiError {
    let error = ApiError::field(
        ErrorCode::Conflict,
        "recipientEmail",
        "this recipient already has an active consent; withdraw it first to record another",
    );
    match existing {
        Some(id) => error.with_details(serde_json::json!({ "consentId": id })),
        None => error,
    }
}

fn link_not_valid() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "unsubscribe link not valid or expired")
}
