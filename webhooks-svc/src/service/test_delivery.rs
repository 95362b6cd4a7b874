//! SendTestDelivery: queue one signed `webhook.test` delivery, attempt it at once, answer with
//! the delivery after that first attempt. A failed test delivery is retried on the schedule like
//! any other.
//!
//! Transaction A stores the event and the delivery, already claimed by this request, with the
//! recovery point `{"deliveryId"}`; the attempt runs and is recorded; transaction B stores the
//! answer. A retry after a crash resumes from the recovery point and answers the delivery as it
//! stands (the dispatcher attempts it once its lease ends).

use super::idempotent::SealedAttempt;
use super::{WebhooksService, endpoint_not_found};
use crate::domain::event::{WEBHOOK_TEST, body_bytes};
use crate::domain::{Delivery, EndpointStatus, WebhookEvent};
use crate::repo;
use crate::repo::deliveries::ClaimedTestDelivery;
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Answer, IdempotencyKey};
use platform::principal::Principal;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Idempotency operation of SendTestDelivery.
pub const OPERATION_TEST: &str = "webhooks.test";
/// The message of every test delivery.
pub const TEST_MESSAGE: &str = "This is a test delivery from the laboratory API.";

/// The recovery point of transaction A: the test delivery it queued.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Queued {
    delivery_id: Uuid,
}

impl WebhooksService {
    /// Queues and attempts one test delivery to the customer's active endpoint.
    pub async fn send_test_delivery(
        &self,
        principal: &Principal,
        key: IdempotencyKey,
        endpoint_id: Uuid,
    ) -> Answer<Delivery> {
        self.idempotent(principal, key, OPERATION_TEST, async |customer_id, attempt| {
            let delivery_id = match attempt.recovery::<Queued>() {
                Some(queued) => queued.delivery_id,
                None => self.queue_and_attempt(customer_id, endpoint_id, attempt).await?,
            };
            self.answer_test(customer_id, delivery_id, attempt).await
        })
        .await
    }

    /// Transaction A, then the attempt and its record; returns the delivery id.
    async fn queue_and_attempt(
        &self,
        customer_id: Uuid,
        id: Uuid,
        attempt: &SealedAttempt<'_>,
    ) -> Result<Uuid, ApiError> {
        let mut tx = self.pool.begin().await?;
        let (endpoint, _) = repo::endpoints::lock(&mut tx, customer_id, id)
            .await?
            .ok_or_else(endpoint_not_found)?;
        if endpoint.status != EndpointStatus::Active {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "the endpoint is disabled; register a new endpoint",
            )
            .with_details(serde_json::json!({ "status": endpoint.status.as_str() })));
        }
        let (traceparent, tracestate) = platform::telemetry::current_trace_context();
        let event_id = Uuid::now_v7();
        let now = platform::time::now();
        let data = serde_json::json!({ "endpoint_id": id.to_string(), "message": TEST_MESSAGE });
        let event = WebhookEvent {
            id: event_id,
            customer_id,
            event_type: WEBHOOK_TEST.to_owned(),
            occurred_at: now,
            body: body_bytes(event_id, WEBHOOK_TEST, now, &data),
            traceparent,
            tracestate,
        };
        let test = ClaimedTestDelivery {
            id: Uuid::now_v7(),
            customer_id,
            endpoint_id: id,
            event_id,
            event_type: WEBHOOK_TEST.to_owned(),
            lease_token: Uuid::new_v4(),
        };
        repo::events::insert(&mut tx, &event).await?;
        repo::deliveries::insert_claimed_test(&mut tx, &test, self.delivery.lease).await?;
        attempt
            .save_recovery(&mut tx, &Queued { delivery_id: test.id })
            .await?;
        tx.commit().await?;
        let mut conn = self.pool.acquire().await?;
        let claimed = repo::dispatch::load_claimed(&mut conn, test.id, test.lease_token)
            .await?
            .ok_or_else(|| ApiError::internal("a claimed test delivery vanished"))?;
        drop(conn);
        let recorded = self.dispatcher.attempt(&claimed).await;
        self.dispatcher.record(&[recorded]).await?;
        Ok(test.id)
    }

    /// Transaction B: the answer is the delivery as it stands, stored for replays.
    async fn answer_test(
        &self,
        customer_id: Uuid,
        delivery_id: Uuid,
        attempt: &SealedAttempt<'_>,
    ) -> Result<Delivery, ApiError> {
        let mut tx = self.pool.begin().await?;
        let delivery = repo::deliveries::get(&mut tx, customer_id, delivery_id)
            .await?
            .ok_or_else(|| ApiError::internal(format!("test delivery {delivery_id} vanished")))?;
        attempt.complete(&mut tx, &delivery).await?;
        tx.commit().await?;
        Ok(delivery)
    }
}
