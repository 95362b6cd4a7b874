//! Placing an order from a quote, idempotently (`platform::idempotency`).
//!
//! Claim the key → validate → on the stablecoin rail, ask payments-svc whether it offers the rail
//! and accepts the `expectedPayerAddress` (`CheckStablecoinRail`; nothing is written before this
//! answers) → read the quote (catalog-svc) → commit the total against the key's
//! spend envelope (payments-svc, atomic per key; released again if the order is not stored) →
//! transaction A: the order, its first
//! history entry, `order.created` and the recovery point `{"orderId"}` → CreateInvoice
//! (payments-svc, idempotent per order) → on the stablecoin rail, RequestStablecoinPayment
//! (idempotent per order: the same request is answered again) → transaction B: the payment
//! block, the stablecoin request and the stored answer. Client errors are stored as the key's outcome so that replays answer identically;
//! transient failures release the claim, and a retry with the same key resumes from the
//! recovery point instead of placing a second order.

use super::OrdersService;
use crate::domain::order::{Order, PaymentSummary, StablecoinRequest, order_number};
use crate::domain::payment_method::{self, PaymentMethod};
use crate::domain::quote::{Placement, Quote, plan_order};
use crate::domain::reference::OrderReference;
use crate::domain::request::UncheckedOrderRequest;
use crate::domain::status::{Lifecycle, OrderStatus};
use crate::repo::{self, InvoiceMerge};
use crate::{OUTBOX, convert, events};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{Answer, Attempt, IdempotencyKey, Json};
use platform::money::Cents;
use platform::principal::Principal;
use proto::common::ShipmentStatus;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Idempotency operation name of CreateOrder.
pub const OPERATION_CREATE: &str = "orders.create";

/// The recovery point of transaction A: the order it placed.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Placed {
    order_id: Uuid,
}

impl OrdersService {
    /// Places an order for the principal's customer under idempotency `key`; the answer is the
    /// order with its payment block.
    pub async fn create_order(
        &self,
        principal: &Principal,
        key: IdempotencyKey,
        request: UncheckedOrderRequest,
    ) -> Answer<Order> {
        let customer_id = match principal.customer() {
            Ok(customer_id) => customer_id,
            Err(error) => return Answer::fresh(Err(error)),
        };
        let call = key.call(customer_id, OPERATION_CREATE);
        self.idempotency
            .run(&self.pool, call, &Json, async |attempt| {
                let order_id = match attempt.recovery::<Placed>() {
                    Some(placed) => placed.order_id,
                    None => self.place(principal, customer_id, attempt, request).await?,
                };
                self.invoice_and_complete(customer_id, attempt, order_id).await
            })
            .await
    }

    /// Validates, reads the quote and commits transaction A; returns the new order's id.
    async fn place(
        &self,
        principal: &Principal,
        customer_id: Uuid,
        attempt: &Attempt<'_, Json>,
        request: UncheckedOrderRequest,
    ) -> Result<Uuid, ApiError> {
        let request = request.validate()?;
        if payment_method::depends_on_configuration(request.payment_method) {
            self.check_stablecoin_rail(
                customer_id,
                request.expected_payer_address.as_deref(),
                principal.sandbox,
            )
            .await?;
        }
        let quote = self.fetch_quote(customer_id, request.quote_id).await?;
        let mut conn = self.pool.acquire().await?;
        if repo::quote_consumed(&mut conn, customer_id, request.quote_id).await? {
            return Err(quote_consumed());
        }
        drop(conn);
        let now = platform::time::now();
        let placement = Placement {
            customer_id,
            spend_limit: principal.spend_limit_cents.map(Cents),
            now,
        };
        let planned = plan_order(quote, request, placement)?;
        let order_id = Uuid::now_v7();
        self.commit_spend(principal, customer_id, ("order", order_id), planned.total())
            .await?;
        let stored = self
            .store_order(attempt, planned, order_id, now, principal.sandbox)
            .await;
        if stored.is_err() {
            self.release_spend(customer_id, ("order", order_id)).await;
        }
        stored
    }

    /// Transaction A: the order, its first history entry, `order.created` and the recovery point.
    async fn store_order(
        &self,
        attempt: &Attempt<'_, Json>,
        planned: crate::domain::quote::PlannedOrder,
        order_id: Uuid,
        now: chrono::DateTime<chrono::Utc>,
        sandbox: bool,
    ) -> Result<Uuid, ApiError> {
        let mut tx = self.pool.begin().await?;
        let sequence = repo::next_order_sequence(&mut tx).await?;
        let mut order = planned.into_order(order_id, order_number(now, sequence));
        order.sandbox = sandbox;
        if let Err(error) = repo::insert_order(&mut tx, &order).await {
            return Err(match platform::error::unique_violation(&error) {
                Some(constraint) if constraint == repo::QUOTE_UNIQUE_CONSTRAINT => quote_consumed(),
                _ => ApiError::from(error),
            });
        }
        OUTBOX.enqueue(&mut tx, events::order_created(&order)).await?;
        attempt
            .save_recovery(&mut tx, &Placed { order_id: order.id })
            .await?;
        repo::view::refresh(&mut tx, order.customer_id, order.id).await?;
        tx.commit().await?;
        tracing::info!(order.id = %order.id, order.number = %order.order_number, "order placed");
        Ok(order.id)
    }

    /// Commits the order total against the calling key's spend envelope (payments-svc). A
    /// refusal (403 `spend_limit_exceeded` with the remainders) passes through; any other
    /// failure is a retryable 503.
    pub(super) async fn commit_spend(
        &self,
        principal: &Principal,
        customer_id: Uuid,
        (kind, subject_id): (&str, Uuid),
        total: Cents,
    ) -> Result<(), ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::PAYMENTS_SVC, Some(customer_id));
        let request = proto::payments::CommitSpendRequest {
            key_id: principal.subject.clone(),
            kind: kind.to_owned(),
            subject_id: subject_id.to_string(),
            amount_cents: total.0,
        };
        match self
            .payments
            .clone()
            .commit_spend(platform::grpc::outgoing(request, &token))
            .await
        {
            Ok(_) => Ok(()),
            Err(status) => {
                let error = ApiError::from_status(&status);
                if error.code == ErrorCode::SpendLimitExceeded {
                    return Err(error);
                }
                Err(ApiError::unavailable(
                    "payments-svc",
                    format!("CommitSpend {:?}: {}", status.code(), status.message()),
                ))
            }
        }
    }

    /// Releases the spend committed for an order that was not stored (best effort: a
    /// commitment never confirmed by an invoice is also released by payments-svc's job).
    pub(super) async fn release_spend(&self, customer_id: Uuid, (kind, subject_id): (&str, Uuid)) {
        let token = self
            .tokens
            .service_token(platform::mesh::PAYMENTS_SVC, Some(customer_id));
        let request = proto::payments::ReleaseSpendRequest {
            kind: kind.to_owned(),
            subject_id: subject_id.to_string(),
        };
        if let Err(status) = self
            .payments
            .clone()
            .release_spend(platform::grpc::outgoing(request, &token))
            .await
        {
            tracing::warn!(spend.kind = kind, spend.subject = %subject_id, error = %status.message(), "could not release the spend of an unplaced order or add-on");
        }
    }

    /// Reads the quote from catalog-svc, acting for the customer.
    async fn fetch_quote(&self, customer_id: Uuid, quote_id: Uuid) -> Result<Quote, ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::CATALOG_SVC, Some(customer_id));
        let request = proto::catalog::GetQuoteRequest {
            quote_id: quote_id.to_string(),
        };
        match self
            .catalog
            .clone()
            .get_quote(platform::grpc::outgoing(request, &token))
            .await
        {
            Ok(response) => {
                let quote = response
                    .into_inner()
                    .quote
                    .ok_or_else(|| ApiError::internal("catalog-svc answered no quote"))?;
                Quote::try_from(quote)
            }
            Err(status) => match ApiError::from_status(&status).code {
                ErrorCode::QuoteNotFound | ErrorCode::NotFound => Err(ApiError::field(
                    ErrorCode::QuoteNotFound,
                    "quoteId",
                    "the quote does not exist",
                )),
                ErrorCode::QuoteExpired => Err(ApiError::field(
                    ErrorCode::QuoteExpired,
                    "quoteId",
                    "the quote has expired; create a new quote",
                )),
                _ => Err(ApiError::unavailable(
                    "catalog-svc",
                    format!("{:?}: {}", status.code(), status.message()),
                )),
            },
        }
    }

    /// Issues the invoice (again, when resuming) and commits transaction B with the stored answer.
    async fn invoice_and_complete(
        &self,
        customer_id: Uuid,
        attempt: &Attempt<'_, Json>,
        order_id: Uuid,
    ) -> Result<Order, ApiError> {
        let order = self.load(customer_id, order_id).await?;
        let summary = self.issue_invoice(&order).await?;
        let stablecoin = match order.payment_method {
            PaymentMethod::ChainStablecoin => Some(self.request_stablecoin_payment(&order).await?),
            PaymentMethod::BankInvoice | PaymentMethod::CardCheckout | PaymentMethod::Unspecified => None,
        };
        let mut tx = self.pool.begin().await?;
        repo::store_invoice_summary(&mut tx, customer_id, order_id, &summary, InvoiceMerge::Overwrite)
            .await?;
        if let Some(request) = &stablecoin {
            repo::store_stablecoin_request(&mut tx, customer_id, order_id, request).await?;
        }
        let order = repo::find_order(&mut tx, customer_id, &OrderReference::Id(order_id))
            .await?
            .ok_or_else(|| ApiError::internal(format!("order {order_id} vanished")))?;
        repo::view::store(&mut tx, &order).await?;
        attempt.complete(&mut tx, &order).await?;
        tx.commit().await?;
        Ok(order)
    }

    async fn load(&self, customer_id: Uuid, order_id: Uuid) -> Result<Order, ApiError> {
        let mut conn = self.pool.acquire().await?;
        repo::find_order(&mut conn, customer_id, &OrderReference::Id(order_id))
            .await?
            .ok_or_else(|| ApiError::internal(format!("recovery point names the missing order {order_id}")))
    }

    /// Calls CreateInvoice on payments-svc (idempotent per order); any failure is a retryable 503.
    async fn issue_invoice(&self, order: &Order) -> Result<PaymentSummary, ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::PAYMENTS_SVC, Some(order.customer_id));
        let key = format!("{OPERATION_CREATE}:{}", order.id);
        let request =
            platform::grpc::outgoing_idempotent(convert::create_invoice_request(order), &token, &key);
        let response = self
            .payments
            .clone()
            .create_invoice(request)
            .await
            .map_err(|status| {
                ApiError::unavailable(
                    "payments-svc",
                    format!("CreateInvoice {:?}: {}", status.code(), status.message()),
                )
            })?;
        let invoice = response
            .into_inner()
            .invoice
            .ok_or_else(|| ApiError::unavailable("payments-svc", "no invoice answered"))?;
        Ok(PaymentSummary::from(&invoice))
    }
}

impl OrdersService {
    /// Asks payments-svc whether it offers the stablecoin rail and accepts `payer` (EIP-55, not
    /// the treasury). Rail off: 400 `payment_method_unavailable` (field `paymentMethod`); a
    /// missing or bad address: 400 `invalid_request` (field `expectedPayerAddress`); payments-svc
    /// unreachable: a retryable 503. Writes nothing.
    async fn check_stablecoin_rail(
        &self,
        customer_id: Uuid,
        payer: Option<&str>,
        sandbox: bool,
    ) -> Result<(), ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::PAYMENTS_SVC, Some(customer_id));
        let request = proto::payments::CheckStablecoinRailRequest {
            expected_payer_address: payer.unwrap_or_default().to_owned(),
            sandbox,
        };
        match self
            .payments
            .clone()
            .check_stablecoin_rail(platform::grpc::outgoing(request, &token))
            .await
        {
            Ok(_) => Ok(()),
            Err(status) => {
                let error = ApiError::from_status(&status);
                match error.code {
                    // Refused to a sandbox customer: payments-svc's explanation stands.
                    ErrorCode::PaymentMethodUnavailable if sandbox => Err(error),
                    ErrorCode::PaymentMethodUnavailable => {
                        Err(payment_method::unavailable(PaymentMethod::ChainStablecoin))
                    }
                    ErrorCode::InvalidRequest => Err(error),
                    _ => Err(ApiError::unavailable(
                        "payments-svc",
                        format!("CheckStablecoinRail {:?}: {}", status.code(), status.message()),
                    )),
                }
            }
        }
    }

    /// Issues the order's stablecoin payment request (RequestStablecoinPayment, idempotent per
    /// order); any failure is a retryable 503 (the retry resumes from the recovery point).
    async fn request_stablecoin_payment(&self, order: &Order) -> Result<StablecoinRequest, ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::PAYMENTS_SVC, Some(order.customer_id));
        let request = proto::payments::RequestStablecoinPaymentRequest {
            reference: order.id.to_string(),
            expected_payer_address: order.expected_payer_address.clone(),
        };
        let response = self
            .payments
            .clone()
            .request_stablecoin_payment(platform::grpc::outgoing(request, &token))
            .await
            .map_err(|status| {
                ApiError::unavailable(
                    "payments-svc",
                    format!(
                        "RequestStablecoinPayment {:?}: {}",
                        status.code(),
                        status.message()
                    ),
                )
            })?;
        let payment = response
            .into_inner()
            .payment
            .ok_or_else(|| ApiError::unavailable("payments-svc", "no stablecoin payment request answered"))?;
        Ok(StablecoinRequest::from(&payment))
    }
}

impl OrdersService {
    /// The placed order as `GET /orders/{reference}` renders it now, for the answer of
    /// `POST /orders` (a fresh placement or a replay). A card or bank order is ship-first: when
    /// its label is not bought yet, shipping-svc is asked to buy it now (PrepareLabel, the same
    /// purchase `order.created` triggers, idempotent per order) and the answer waits for it up to
    /// the label wait; past that, or when shipping-svc fails, the order answers with the pending
    /// shipping block and `shipment.label_created` fills it in (docs/order-states.md). Never
    /// fails the placement: a view that cannot be read is `None`.
    ///
    /// `replayed`: the order is a stored answer, whose status may be behind the order's.
    pub async fn placed_order_view(&self, order: &Order, replayed: bool) -> Option<super::OrderView> {
        if payment_method::SHIP_FIRST.contains(&order.payment_method) && !self.label_wait.is_zero() {
            let status = match replayed {
                false => Some(order.status),
                true => self.current_status(order).await,
            };
            if status.is_some_and(|status| status.can_transition_to(OrderStatus::LabelGenerated)) {
                self.label_while_placing(order).await;
            }
        }
        match self
            .get_order_view(order.customer_id, &order.id.to_string())
            .await
        {
            Ok(view) => Some(view),
            Err(error) => {
                tracing::warn!(order.id = %order.id, %error, "the placed order's view could not be read");
                None
            }
        }
    }

    async fn current_status(&self, order: &Order) -> Option<OrderStatus> {
        let mut conn = self.pool.acquire().await.ok()?;
        repo::order_status(&mut conn, order.customer_id, order.id)
            .await
            .ok()
            .flatten()
    }

    /// Asks shipping-svc to buy the order's label, waiting up to the label wait, and keeps it
    /// as the order's shipping block (the order moves to `label_generated`), exactly as
    /// `shipment.label_created` will.
    async fn label_while_placing(&self, order: &Order) {
        let token = self
            .tokens
            .service_token(platform::mesh::SHIPPING_SVC, Some(order.customer_id));
        let request = proto::shipping::PrepareLabelRequest {
            order_id: order.id.to_string(),
            order_number: order.order_number.clone(),
            payment_method: order.payment_method as i32,
            quote_id: order.quote_id.to_string(),
            shipping_address_id: order.shipping_address_id.map(|id| id.to_string()),
            sandbox: order.sandbox,
        };
        let mut call = platform::grpc::outgoing(request, &token);
        call.set_timeout(self.label_wait);
        let mut shipping = self.shipping.clone();
        let prepared = match tokio::time::timeout(self.label_wait, shipping.prepare_label(call)).await {
            Ok(Ok(response)) => response.into_inner(),
            Ok(Err(status)) => {
                tracing::warn!(order.id = %order.id, code = ?status.code(), error = %status.message(), "label not bought while placing; order.created buys it");
                return;
            }
            Err(_) => {
                tracing::info!(order.id = %order.id, wait_ms = self.label_wait.as_millis(), "label not bought within the wait; the order answers with the pending shipping block");
                return;
            }
        };
        let Some(label) = prepared.label else {
            return;
        };
        let status = ShipmentStatus::try_from(prepared.status).unwrap_or(ShipmentStatus::PreTransit);
        let news = super::ShipmentNews::LabelCreated {
            label: Some(&label),
            status,
        };
        let applied = async {
            let mut tx = self.pool.begin().await?;
            super::shipment_events::apply_news(&mut tx, order.customer_id, order.id, news).await?;
            tx.commit().await
        };
        if let Err(error) = applied.await {
            tracing::warn!(order.id = %order.id, %error, "the label bought while placing was not kept; shipment.label_created keeps it");
        }
    }
}

fn quote_consumed() -> ApiError {
    ApiError::field(
        ErrorCode::QuoteAlreadyConsumed,
        "quoteId",
        "the quote was already used by an order",
    )
}
