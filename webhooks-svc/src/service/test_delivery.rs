//! SendTestDelivery: queue one signed `webhook.test` delivery, attempt it at once, answer with
//! the delivery after that first attempt. A failed test delivery is retried on the schedule like
//! any other.
//!
//! Transaction A stores the event and the delivery, already claimed by this request, with the
//! recovery point `{"deliveryId"}`; the attempt runs and is recorded; transaction B stores the
//! answer. A retry after a crash resumes from the recovery point and answers the delivery as it
//! stands (the dispatcher attempts it once its lease ends).

use super::idempotent::{EndpointRun, Outcome};
use super::{WebhooksService, endpoint_not_found};
use crate::domain::event::{WEBHOOK_TEST, body_bytes};
use crate::domain::{EndpointStatus, WebhookEvent};
use crate::repo;
use crate::repo::deliveries::ClaimedTestDelivery;
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::Ticket;
use platform::principal::Principal;
use proto::webhooks as pb;
use uuid::Uuid;

/// Idempotency operation of SendTestDelivery.
pub const OPERATION_TEST: &str = "webhooks.test";
/// The message of every test delivery.
pub const TEST_MESSAGE: &str = "This is a test delivery from the laboratory API.";

impl WebhooksService {
    /// Queues and attempts one test delivery to the customer's active endpoint.
    pub async fn send_test_delivery(
        &self,
        principal: &Principal,
        key: String,
        request: pb::SendTestDeliveryRequest,
    ) -> Outcome<pb::SendTestDeliveryResponse> {
        let EndpointRun {
            customer_id,
            endpoint_id: id,
            ticket,
            recovery,
        } = match self
            .start_endpoint_operation(principal, key, OPERATION_TEST, &request.endpoint_id, &request)
            .await
        {
            Ok(run) => run,
            Err(answer) => return answer,
        };
        let resumed = recovery
            .as_ref()
            .and_then(|point| point.get("deliveryId")?.as_str()?.parse::<Uuid>().ok());
        let delivery_id = match resumed {
            Some(delivery_id) => delivery_id,
            None => match self.queue_and_attempt(customer_id, id, &ticket).await {
                Ok(delivery_id) => delivery_id,
                Err(error) => return Outcome::fresh(Err(self.settle_failure(&ticket, error).await)),
            },
        };
        match self.answer_test(customer_id, delivery_id, &ticket).await {
            Ok(response) => Outcome::fresh(Ok(response)),
            Err(error) => {
                self.release(&ticket).await;
                Outcome::fresh(Err(error))
            }
        }
    }

    /// Transaction A, then the attempt and its record; returns the delivery id.
    async fn queue_and_attempt(
        &self,
        customer_id: Uuid,
        id: Uuid,
        ticket: &Ticket,
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
        self.idempotency
            .save_recovery(&mut tx, ticket, &serde_json::json!({ "deliveryId": test.id }))
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
        ticket: &Ticket,
    ) -> Result<pb::SendTestDeliveryResponse, ApiError> {
        let mut tx = self.pool.begin().await?;
        let delivery = repo::deliveries::get(&mut tx, customer_id, delivery_id)
            .await?
            .ok_or_else(|| ApiError::internal(format!("test delivery {delivery_id} vanished")))?;
        let response = pb::SendTestDeliveryResponse {
            delivery: Some((&delivery).into()),
        };
        self.complete(&mut tx, ticket, OPERATION_TEST, customer_id, &response)
            .await?;
        tx.commit().await?;
        Ok(response)
    }
}
