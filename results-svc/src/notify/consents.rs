//! Consent records: recorded (once per recipient while active; not from before the recipient's
//! last unsubscribe), listed, withdrawn by the customer, and withdrawn by the recipient through
//! the signed one-click unsubscribe link.

use super::consent::{
    self, Consent, ConsentInput, NewConsent, WITHDRAWN_BY_CUSTOMER, WITHDRAWN_BY_ONE_CLICK,
};
use super::repo::{self, ConsentFilter};
use super::{
    CONSENTS, Notifications, OPERATION_RECORD_CONSENT, Unsubscribed, link_not_valid, second_consent,
};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Answer, Attempt, IdempotencyKey, Json};
use platform::pagination::{After, Page, PageRequest};
use platform::principal::Principal;
use uuid::Uuid;

impl Notifications {
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
