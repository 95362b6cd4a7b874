//! Carriers behind one interface ([`Carrier`]): buy a prepaid label, book a door pickup, void
//! a label and cancel a pickup when the order is cancelled. The
//! built-in sandbox carrier ([`sandbox`]) is the local default; the EasyPost adapter
//! ([`easypost`]) speaks a multi-carrier shipping API and is selected by configuration.
//! [`CarrierAdapter`] is the one the service holds.

pub mod easypost;
pub mod sandbox;

use crate::domain::Address;
use crate::domain::void::RefundStatus;
use chrono::NaiveDate;
use std::future::Future;
use uuid::Uuid;

/// What a label purchase needs.
#[derive(Clone, Debug)]
pub struct LabelPurchase {
    pub shipment_id: Uuid,
    pub order_number: String,
    /// A number unique to this shipment in this deployment (the sandbox's package number).
    pub sequence: i64,
    pub ship_from: Address,
    pub ship_to: Address,
}

/// A bought label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PurchasedLabel {
    pub carrier_code: String,
    pub carrier_name: String,
    pub service_code: String,
    pub service_name: String,
    pub tracking_number: String,
    pub tracking_url: String,
    /// The carrier's id of the shipment (empty for the sandbox).
    pub carrier_shipment_id: String,
}

/// A door pickup to book.
#[derive(Clone, Debug)]
pub struct PickupBooking {
    pub pickup_id: Uuid,
    pub tracking_number: String,
    pub carrier_shipment_id: String,
    pub date: NaiveDate,
    /// Window start and end, `HH:MM` (UTC).
    pub window: (String, String),
    pub address: Address,
}

/// Why a carrier call failed.
#[derive(Debug, thiserror::Error)]
pub enum CarrierError {
    /// The carrier could not be reached or failed; a retry may succeed.
    #[error("carrier unavailable: {0}")]
    Unavailable(String),
    /// The carrier refused the request as it is.
    #[error("carrier refused: {0}")]
    Rejected(String),
}

/// A carrier.
///
/// A label is bought in two steps so that a purchase is never repeated: [`Carrier::create_shipment`]
/// creates the carrier's shipment (nothing is bought or billed) and the caller records its id
/// before [`Carrier::buy_label`] buys it. A retry after a crash between the carrier's purchase
/// and our commit passes the recorded id again, and the adapter answers the label bought then
/// instead of buying another.
pub trait Carrier: Send + Sync {
    /// Creates the carrier's shipment of a purchase without buying it; returns the carrier's
    /// shipment id to record, or `""` when the carrier has no such step (the sandbox).
    fn create_shipment(
        &self,
        purchase: &LabelPurchase,
    ) -> impl Future<Output = Result<String, CarrierError>> + Send;

    /// Buys the prepaid inbound label of the carrier's shipment `carrier_shipment_id` (as
    /// recorded from [`Carrier::create_shipment`]); when that shipment was bought already (an
    /// earlier attempt), answers that label and buys nothing.
    fn buy_label(
        &self,
        purchase: &LabelPurchase,
        carrier_shipment_id: &str,
    ) -> impl Future<Output = Result<PurchasedLabel, CarrierError>> + Send;

    /// Creates the carrier's door pickup without booking it; returns the carrier's pickup id to
    /// record, or `""` when the carrier has no such step (the sandbox). Pickups follow the
    /// label's two steps for the same reason: a booking is billed and never repeated.
    fn create_pickup(
        &self,
        booking: &PickupBooking,
    ) -> impl Future<Output = Result<String, CarrierError>> + Send;

    /// Books (buys) the carrier's pickup `carrier_pickup_id` (as recorded from
    /// [`Carrier::create_pickup`]) and returns its confirmation number; when that pickup was
    /// booked already (an earlier attempt), answers its confirmation and books nothing.
    fn buy_pickup(
        &self,
        booking: &PickupBooking,
        carrier_pickup_id: &str,
    ) -> impl Future<Output = Result<String, CarrierError>> + Send;

    /// Voids the bought label of the carrier's shipment `carrier_shipment_id` (tracking number
    /// `tracking_number`) and asks for its postage back; answers the carrier's refund status.
    /// Idempotent: a label voided already answers its standing refund status and is not voided
    /// again. [`CarrierError::Rejected`] when the carrier refuses the void as it is.
    fn void_label(
        &self,
        carrier_shipment_id: &str,
        tracking_number: &str,
    ) -> impl Future<Output = Result<RefundStatus, CarrierError>> + Send;

    /// Cancels the booked pickup `carrier_pickup_id` (a cancelled one is answered as it stands).
    fn cancel_pickup(&self, carrier_pickup_id: &str)
    -> impl Future<Output = Result<(), CarrierError>> + Send;
}

/// The carrier a deployment uses.
#[derive(Clone, Debug)]
pub enum CarrierAdapter {
    Sandbox(sandbox::SandboxCarrier),
    EasyPost(easypost::EasyPostCarrier),
}

impl CarrierAdapter {
    /// True for the built-in sandbox (its scan scripts may be played).
    pub fn is_sandbox(&self) -> bool {
        matches!(self, CarrierAdapter::Sandbox(_))
    }

    /// The EasyPost adapter, for verifying its webhooks.
    pub fn easypost(&self) -> Option<&easypost::EasyPostCarrier> {
        match self {
            CarrierAdapter::EasyPost(adapter) => Some(adapter),
            CarrierAdapter::Sandbox(_) => None,
        }
    }
}

impl Carrier for CarrierAdapter {
    async fn create_shipment(&self, purchase: &LabelPurchase) -> Result<String, CarrierError> {
        match self {
            CarrierAdapter::Sandbox(carrier) => carrier.create_shipment(purchase).await,
            CarrierAdapter::EasyPost(carrier) => carrier.create_shipment(purchase).await,
        }
    }

    async fn buy_label(
        &self,
        purchase: &LabelPurchase,
        carrier_shipment_id: &str,
    ) -> Result<PurchasedLabel, CarrierError> {
        match self {
            CarrierAdapter::Sandbox(carrier) => carrier.buy_label(purchase, carrier_shipment_id).await,
            CarrierAdapter::EasyPost(carrier) => carrier.buy_label(purchase, carrier_shipment_id).await,
        }
    }

    async fn create_pickup(&self, booking: &PickupBooking) -> Result<String, CarrierError> {
        match self {
            CarrierAdapter::Sandbox(carrier) => carrier.create_pickup(booking).await,
            CarrierAdapter::EasyPost(carrier) => carrier.create_pickup(booking).await,
        }
    }

    async fn buy_pickup(
        &self,
        booking: &PickupBooking,
        carrier_pickup_id: &str,
    ) -> Result<String, CarrierError> {
        match self {
            CarrierAdapter::Sandbox(carrier) => carrier.buy_pickup(booking, carrier_pickup_id).await,
            CarrierAdapter::EasyPost(carrier) => carrier.buy_pickup(booking, carrier_pickup_id).await,
        }
    }

    async fn void_label(
        &self,
        carrier_shipment_id: &str,
        tracking_number: &str,
    ) -> Result<RefundStatus, CarrierError> {
        match self {
            CarrierAdapter::Sandbox(carrier) => {
                carrier.void_label(carrier_shipment_id, tracking_number).await
            }
            CarrierAdapter::EasyPost(carrier) => {
                carrier.void_label(carrier_shipment_id, tracking_number).await
            }
        }
    }

    async fn cancel_pickup(&self, carrier_pickup_id: &str) -> Result<(), CarrierError> {
        match self {
            CarrierAdapter::Sandbox(carrier) => carrier.cancel_pickup(carrier_pickup_id).await,
            CarrierAdapter::EasyPost(carrier) => carrier.cancel_pickup(carrier_pickup_id).await,
        }
    }
}
