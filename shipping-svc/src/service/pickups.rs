//! Door pickups, once the order is paid:
//!
//! * options: the order's shipment, the offered dates and windows, the price and a signed quote
//!   token binding them to the order (expires after 15 minutes);
//! * request (idempotent, `confirm: true`): verify the token, the chosen date and window among
//!   those it offers and not past (the window is not over), the key's spend limit, that
//!   the order is paid and the shipment has no pickup awaiting payment or booked; open the
//!   pickup's hosted payment at payments-svc (`OpenPickupCheckout`: a checkout session bound to
//!   the pickup, locked to its price, which also commits the price to the key's spend envelope)
//!   and store the pickup `awaiting_payment` with that session's URL as `payUrl`. The pickup id
//!   is saved as the idempotency key's recovery point before payments-svc is called, so a retry
//!   after a crash reopens the same session (idempotent per pickup) instead of a second one;
//! * payment confirmation ([`ShippingService::confirm_pickup_payment`]): by the consumer of
//!   `pickup_payment.paid` (payments-svc's settlement of that session), or by staff for a bank
//!   transfer (`labctl shipments pickup-paid`): book with the carrier, store the confirmation
//!   number, enqueue `shipment.updated` (status `pickup_booked`). Idempotent: a booked pickup
//!   answers as it stands;
//! * payment expiry (`pickup_payment.expired`): the pickup ends `payment_expired` and the
//!   shipment may request a new one.

use super::{ShippingService, shipment_not_found};
use crate::carrier::{Carrier, CarrierError, PickupBooking};
use crate::domain::Shipment;
use crate::domain::pickup::{self, Pickup, PickupStatus, QuoteClaims, Window};
use crate::repo::shipments::ShipmentRef;
use crate::{OUTBOX, events, repo};
use chrono::{DateTime, NaiveDate, Utc};
use platform::error::{ApiError, ErrorCode};
use platform::idempotency::{IdempotencyKey, Json};
use uuid::Uuid;

/// Operation name of pickup requests in the idempotency store.
pub const OPERATION_REQUEST_PICKUP: &str = "shipping.request_pickup";

/// The options offered for an order.
#[derive(Clone, Debug)]
pub struct PickupOptions {
    pub shipment: Shipment,
    pub dates: Vec<NaiveDate>,
    pub windows: Vec<Window>,
    pub price_cents: i64,
    pub quote_token: String,
    pub expires_at: DateTime<Utc>,
}

/// A pickup request as the customer sent it.
#[derive(Clone, Debug)]
pub struct PickupRequest {
    pub reference: String,
    pub date: String,
    pub window: String,
    pub quote_token: String,
    pub confirm: bool,
}

impl ShippingService {
    async fn paid_shipment(&self, customer_id: Uuid, reference: &str) -> Result<Shipment, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let shipment = repo::shipments::by_reference(&mut conn, customer_id, &ShipmentRef::parse(reference))
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "order not found"))?;
        if let Some(voided) = &shipment.voided {
            return Err(super::label_voided(voided));
        }
        if !repo::shipments::is_paid(&mut conn, customer_id, shipment.order_id).await? {
            return Err(ApiError::new(
                ErrorCode::OrderNotPaid,
                "a door pickup can be booked once the order is paid",
            ));
        }
        if repo::pickups::by_shipment(&mut conn, shipment.id)
            .await?
            .is_some_and(|pickup| pickup.status != PickupStatus::PaymentExpired)
        {
            return Err(already_requested());
        }
        Ok(shipment)
    }

    /// The pickup options of the customer's paid order.
    pub async fn pickup_options(
        &self,
        customer_id: Uuid,
        reference: &str,
    ) -> Result<PickupOptions, ApiError> {
        let shipment = self.paid_shipment(customer_id, reference).await?;
        let now = platform::time::now();
        let dates = self.pickup.dates(now);
        let expires_at = now + self.pickup.token_ttl;
        let claims = QuoteClaims {
            c: customer_id,
            o: shipment.order_id,
            s: shipment.id,
            d: dates
                .iter()
                .map(|date| date.format("%Y-%m-%d").to_string())
                .collect(),
            w: self
                .pickup
                .windows
                .iter()
                .map(|window| window.id.clone())
                .collect(),
            p: self.pickup.price_cents,
            e: expires_at.timestamp(),
        };
        Ok(PickupOptions {
            shipment,
            dates,
            windows: self.pickup.windows.clone(),
            price_cents: self.pickup.price_cents,
            quote_token: pickup::sign(&self.signing_key, &claims),
            expires_at,
        })
    }

    /// Requests a door pickup under an idempotency key; `key_id` is the requesting API key
    /// (its spend envelope is charged when the payment opens).
    pub async fn request_pickup(
        &self,
        customer_id: Uuid,
        key_id: &str,
        spend_limit_cents: Option<i64>,
        key: IdempotencyKey,
        request: PickupRequest,
    ) -> platform::idempotency::Answer<Pickup> {
        let call = key.call(customer_id, OPERATION_REQUEST_PICKUP);
        self.idempotency
            .run(&self.pool, call, &Json, async |attempt| {
                if !request.confirm {
                    return Err(ApiError::field(
                        ErrorCode::ConfirmationRequired,
                        "confirm",
                        "a pickup request needs confirm: true",
                    ));
                }
                let shipment = match self.paid_shipment(customer_id, &request.reference).await {
                    Ok(shipment) => shipment,
                    // Payment may land later: that refusal is not stored for the key.
                    Err(error) if error.code == ErrorCode::OrderNotPaid => {
                        return Err(attempt.transient(error));
                    }
                    Err(error) => return Err(error),
                };
                let now = platform::time::now();
                let claims = pickup::verify(
                    &self.signing_key,
                    &request.quote_token,
                    customer_id,
                    shipment.order_id,
                    now,
                )?;
                if claims.s != shipment.id {
                    return Err(pickup::invalid_token());
                }
                let unavailable = |field: &str, message: &str| {
                    ApiError::field(ErrorCode::PickupDateUnavailable, field, message.to_owned())
                };
                let date = NaiveDate::parse_from_str(request.date.trim(), "%Y-%m-%d").map_err(|_| {
                    ApiError::field(ErrorCode::InvalidRequest, "date", "date must be YYYY-MM-DD")
                })?;
                if date < now.date_naive() {
                    return Err(unavailable("date", "the pickup date is in the past"));
                }
                if !claims.d.contains(&request.date.trim().to_owned()) {
                    return Err(unavailable(
                        "date",
                        "the pickup date is not one of the offered dates",
                    ));
                }
                if !claims.w.contains(&request.window) || self.pickup.window(&request.window).is_none() {
                    return Err(unavailable(
                        "window",
                        "the pickup window is not one of the offered windows",
                    ));
                }
                if let Some(limit) = spend_limit_cents
                    && claims.p > limit
                {
                    return Err(ApiError::new(
                        ErrorCode::SpendLimitExceeded,
                        "the pickup price exceeds the key's spending envelope",
                    )
                    .with_details(serde_json::json!({ "priceCents": claims.p, "spendLimitCents": limit })));
                }
                let window = self
                    .pickup
                    .window(&request.window)
                    .cloned()
                    .ok_or_else(|| unavailable("window", "the pickup window is not offered"))?;
                let window_end = window_end(date, &window)
                    .ok_or_else(|| unavailable("window", "the pickup window is not offered"))?;
                if window_end <= now {
                    return Err(unavailable("window", "the pickup window is over"));
                }
                // The pickup id of an interrupted attempt, so that its payment is reopened, not doubled.
                let id = match attempt.recovery::<PickupRecovery>() {
                    Some(recovery) => recovery.pickup_id,
                    None => {
                        let id = Uuid::now_v7();
                        let mut tx = self.pool.begin().await?;
                        attempt
                            .save_recovery(&mut tx, &PickupRecovery { pickup_id: id })
                            .await?;
                        tx.commit().await?;
                        id
                    }
                };
                let description = format!(
                    "Door pickup of order {} on {} between {} and {} (UTC)",
                    shipment.order_number,
                    date.format("%Y-%m-%d"),
                    window.start,
                    window.end
                );
                let session = match self
                    .open_pickup_payment(&shipment, id, key_id, &description, claims.p, window_end)
                    .await
                {
                    Ok(session) => session,
                    // A refusal about the request (the envelope) is the key's answer; anything
                    // else may pass on a retry.
                    Err(error) if error.code == ErrorCode::SpendLimitExceeded => return Err(error),
                    Err(error) => return Err(attempt.transient(error)),
                };
                let pickup = Pickup {
                    id,
                    customer_id,
                    shipment_id: shipment.id,
                    order_id: shipment.order_id,
                    status: PickupStatus::AwaitingPayment,
                    date,
                    window: request.window.clone(),
                    price_cents: claims.p,
                    pay_url: session.hosted_url.clone(),
                    checkout_session_id: Some(session.id.clone()),
                    pay_expires_at: session
                        .expires_at
                        .as_ref()
                        .and_then(platform::time::from_timestamp),
                    payment_reference: None,
                    confirmation_number: None,
                    carrier_pickup_id: None,
                    created_at: now,
                    booked_at: None,
                };
                let mut tx = self.pool.begin().await?;
                if !repo::pickups::insert(&mut tx, &pickup).await? {
                    return Err(already_requested());
                }
                attempt.complete(&mut tx, &pickup).await?;
                tx.commit().await?;
                Ok(pickup)
            })
            .await
    }

    /// Books a pickup whose payment settled (`payment_reference`); a booked pickup answers as
    /// it stands. `customer_id`: the pickup must be that customer's (the payment event's), or
    /// `None` for staff. A pickup whose payment expired is 409.
    pub async fn confirm_pickup_payment(
        &self,
        customer_id: Option<Uuid>,
        pickup_id: &str,
        payment_reference: &str,
    ) -> Result<Pickup, ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "pickup not found");
        let id = Uuid::parse_str(pickup_id.trim()).map_err(|_| not_found())?;
        if payment_reference.trim().is_empty() {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "paymentReference",
                "a payment reference is required",
            ));
        }
        // Step 1: the carrier's pickup is created (nothing booked or billed yet) and its id
        // committed, so that whatever happens during the purchase a retry buys that same
        // pickup or reads back its booking.
        let (pickup, shipment, booking) = {
            let mut tx = self.pool.begin().await?;
            let (pickup, shipment) = match self
                .pickup_to_book(&mut tx, customer_id, id, payment_reference)
                .await?
            {
                ToBook::Done(pickup) => {
                    tx.commit().await?;
                    return Ok(*pickup);
                }
                ToBook::Book(found) => *found,
            };
            let booking = self.booking(&pickup, &shipment);
            if pickup.carrier_pickup_id.is_none() {
                let carrier_pickup_id = self
                    .carrier_for(shipment.sandbox)
                    .create_pickup(&booking)
                    .await
                    .map_err(carrier_error)?;
                repo::pickups::record_carrier_pickup(&mut tx, pickup.id, &carrier_pickup_id).await?;
            }
            tx.commit().await?;
            (pickup, shipment, booking)
        };
        // Step 2: buy it (or read back the booking of an interrupted earlier attempt) and record
        // the booking with its event, under the pickup's lock again.
        let mut tx = self.pool.begin().await?;
        let pickup = match self
            .pickup_to_book(&mut tx, customer_id, pickup.id, payment_reference)
            .await?
        {
            ToBook::Done(pickup) => {
                tx.commit().await?;
                return Ok(*pickup);
            }
            ToBook::Book(found) => found.0,
        };
        let carrier_pickup_id = pickup.carrier_pickup_id.clone().unwrap_or_default();
        let confirmation = self
            .carrier_for(shipment.sandbox)
            .buy_pickup(&booking, &carrier_pickup_id)
            .await
            .map_err(carrier_error)?;
        let now = platform::time::now();
        repo::pickups::book(&mut tx, pickup.id, payment_reference.trim(), &confirmation, now).await?;
        OUTBOX
            .enqueue(&mut tx, events::pickup_booked(&shipment, &pickup, &confirmation))
            .await?;
        tx.commit().await?;
        Ok(Pickup {
            status: PickupStatus::Booked,
            payment_reference: Some(payment_reference.trim().to_owned()),
            confirmation_number: Some(confirmation),
            booked_at: Some(now),
            ..pickup
        })
    }

    /// Locks the pickup `id` and says whether it is still to book (with its shipment) or is
    /// answered as it stands (booked already). A pickup of another customer is 404; one whose
    /// payment expired is 409.
    async fn pickup_to_book(
        &self,
        tx: &mut sqlx::PgConnection,
        customer_id: Option<Uuid>,
        id: Uuid,
        payment_reference: &str,
    ) -> Result<ToBook, ApiError> {
        let not_found = || ApiError::new(ErrorCode::NotFound, "pickup not found");
        let pickup = repo::pickups::lock(&mut *tx, id).await?.ok_or_else(not_found)?;
        if customer_id.is_some_and(|customer_id| customer_id != pickup.customer_id) {
            return Err(not_found());
        }
        if pickup.status == PickupStatus::Booked {
            if pickup.payment_reference.as_deref() != Some(payment_reference.trim()) {
                tracing::warn!(
                    pickup = %pickup.id,
                    "a booked pickup was paid again under another reference; that payment is due a refund"
                );
            }
            return Ok(ToBook::Done(Box::new(pickup)));
        }
        if pickup.status == PickupStatus::Cancelled {
            tracing::warn!(
                pickup = %pickup.id,
                "a pickup cancelled with its order was paid; that payment is due a refund"
            );
            return Ok(ToBook::Done(Box::new(pickup)));
        }
        if pickup.status == PickupStatus::PaymentExpired {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "the pickup's payment link expired and the pickup ended; request a new pickup",
            ));
        }
        let shipment = repo::shipments::by_id(&mut *tx, pickup.shipment_id)
            .await?
            .ok_or_else(shipment_not_found)?;
        Ok(ToBook::Book(Box::new((pickup, shipment))))
    }

    /// What the carrier needs to book `pickup` of `shipment`.
    fn booking(&self, pickup: &Pickup, shipment: &Shipment) -> PickupBooking {
        let window = self
            .pickup
            .window(&pickup.window)
            .map(|window| (window.start.clone(), window.end.clone()))
            .unwrap_or_else(|| ("09:00".to_owned(), "17:00".to_owned()));
        PickupBooking {
            pickup_id: pickup.id,
            tracking_number: shipment.tracking_number.clone(),
            carrier_shipment_id: shipment.carrier_shipment_id.clone(),
            date: pickup.date,
            window,
            address: shipment.ship_from.clone(),
        }
    }

    /// Ends a pickup whose payment expired unpaid (`pickup_payment.expired`); a booked pickup, or
    /// one ended before, is unchanged. Returns whether it ended now.
    pub async fn expire_pickup_payment(&self, customer_id: Uuid, pickup_id: Uuid) -> Result<bool, ApiError> {
        let mut conn = self.pool.acquire().await?;
        let ended = repo::pickups::expire_payment(&mut conn, customer_id, pickup_id).await?;
        if ended {
            tracing::info!(pickup = %pickup_id, "the pickup's payment expired; the pickup ended");
        }
        Ok(ended)
    }

    /// Opens the pickup's hosted payment at payments-svc, acting for the shipment's customer.
    async fn open_pickup_payment(
        &self,
        shipment: &Shipment,
        pickup_id: Uuid,
        key_id: &str,
        description: &str,
        price_cents: i64,
        pay_by: DateTime<Utc>,
    ) -> Result<proto::payments::CheckoutSession, ApiError> {
        let token = self
            .tokens
            .service_token(platform::mesh::PAYMENTS_SVC, Some(shipment.customer_id));
        let request = proto::payments::OpenPickupCheckoutRequest {
            pickup_id: pickup_id.to_string(),
            order_id: shipment.order_id.to_string(),
            order_number: shipment.order_number.clone(),
            description: description.to_owned(),
            amount_cents: price_cents,
            currency: "USD".to_owned(),
            key_id: key_id.to_owned(),
            pay_by: Some(platform::time::to_timestamp(pay_by)),
            sandbox: shipment.sandbox,
        };
        match self
            .payments
            .clone()
            .open_pickup_checkout(platform::grpc::outgoing(request, &token))
            .await
        {
            Ok(answer) => answer
                .into_inner()
                .session
                .ok_or_else(|| ApiError::internal("payments-svc answered no session")),
            Err(status) => {
                let error = ApiError::from_status(&status);
                if error.code == ErrorCode::SpendLimitExceeded {
                    return Err(error);
                }
                Err(ApiError::unavailable(
                    "payments-svc",
                    format!("OpenPickupCheckout {:?}: {}", status.code(), status.message()),
                ))
            }
        }
    }
}

/// A locked pickup: still to book (with its shipment), or answered as it stands.
enum ToBook {
    Done(Box<Pickup>),
    Book(Box<(Pickup, Shipment)>),
}

/// The API error of a failed carrier call.
fn carrier_error(error: CarrierError) -> ApiError {
    match error {
        CarrierError::Unavailable(cause) => ApiError::unavailable("the carrier", cause),
        CarrierError::Rejected(cause) => ApiError::new(
            ErrorCode::Conflict,
            format!("the carrier refused the pickup: {cause}"),
        ),
    }
}

/// The recovery point of a pickup request: the pickup id chosen before payments-svc was called.
#[derive(serde::Serialize, serde::Deserialize)]
struct PickupRecovery {
    pickup_id: Uuid,
}

/// The end of `window` on `date` (UTC): the latest time its payment may be taken.
fn window_end(date: NaiveDate, window: &Window) -> Option<DateTime<Utc>> {
    let time = chrono::NaiveTime::parse_from_str(&window.end, "%H:%M").ok()?;
    Some(date.and_time(time).and_utc())
}

fn already_requested() -> ApiError {
    ApiError::new(
        ErrorCode::PickupAlreadyRequested,
        "the shipment already has a door pickup",
    )
}
