//! The EasyPost adapter: buys labels (`POST /v2/shipments`, whose id the service records before
//! buying, then `GET /v2/shipments/{id}` and `POST /v2/shipments/{id}/buy` with the rate of the
//! configured carrier and service; a shipment the GET shows bought already, by an attempt that
//! crashed before our commit, is answered as it is and never bought twice), books pickups (`POST /v2/pickups`, then
//! `POST /v2/pickups/{id}/buy`), voids the label of a cancelled order (`GET /v2/shipments/{id}`:
//! a shipment with a `refund_status` was voided already and answers it; otherwise
//! `POST /v2/shipments/{id}/refund`, answering the shipment with `refund_status` `submitted`,
//! `refunded` or `rejected`), cancels booked pickups (`POST /v2/pickups/{id}/cancel`), and verifies and reads tracker webhooks (`tracker.updated`
//! events). A webhook is accepted only with EasyPost's timestamped signature: `X-Timestamp`
//! (RFC 2822), `X-Path` and `X-Hmac-Signature-V2: hmac-sha256-hex=<hex HMAC-SHA256 of
//! timestamp + "POST" + path + the raw body, keyed with the webhook secret>`, the timestamp
//! within the configured tolerance of now (the legacy `X-Hmac-Signature`, over the body alone,
//! would let a captured delivery be replayed forever and is not accepted). Requests use HTTP
//! basic authentication with the API key as user name, as EasyPost documents. Tested against a
//! local double of the API (`tests/src/easypost.rs`). The webhook half lives in [`webhook`].

mod webhook;

pub use webhook::{
    DEFAULT_WEBHOOK_TOLERANCE, PATH_HEADER, SIGNATURE_HEADER, SIGNATURE_PREFIX, TIMESTAMP_HEADER,
    WEBHOOK_METHOD, WebhookDelivery, WebhookEvent, WebhookRefusal, read_event,
};

use super::{Carrier, CarrierError, LabelPurchase, PickupBooking, PurchasedLabel};
use crate::domain::Address;
use crate::domain::void::RefundStatus;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// Settings of the adapter.
#[derive(Clone, Debug)]
pub struct EasyPostSettings {
    /// API root, `https://api.easypost.com` in production.
    pub base_url: String,
    pub api_key: SecretString,
    pub webhook_secret: SecretString,
    /// Largest distance between a webhook's signed timestamp and now, either way.
    pub webhook_tolerance: Duration,
    /// Carrier and service of the rate to buy, for example `UPS` / `Ground`.
    pub carrier: String,
    pub service: String,
}

/// The adapter.
#[derive(Clone, Debug)]
pub struct EasyPostCarrier {
    settings: EasyPostSettings,
    http: reqwest::Client,
}

fn address_json(address: &Address) -> Value {
    json!({
        "name": address.name,
        "company": address.company,
        "street1": address.street1,
        "street2": address.street2,
        "city": address.city,
        "state": address.state,
        "zip": address.postal_code,
        "country": address.country,
        "phone": address.phone,
        "email": address.email,
    })
}

#[derive(Deserialize)]
struct Rate {
    id: String,
    carrier: String,
    service: String,
}

#[derive(Deserialize)]
struct CreatedShipment {
    id: String,
}

#[derive(Deserialize)]
struct Tracker {
    #[serde(default)]
    public_url: String,
}

#[derive(Deserialize)]
struct BoughtShipment {
    id: String,
    tracking_code: String,
    selected_rate: Rate,
    tracker: Option<Tracker>,
}

/// A shipment as `GET /v2/shipments/{id}` answers it: bought when it has a tracking code and a
/// selected rate.
#[derive(Deserialize)]
struct FetchedShipment {
    id: String,
    #[serde(default)]
    rates: Vec<Rate>,
    tracking_code: Option<String>,
    selected_rate: Option<Rate>,
    tracker: Option<Tracker>,
}

/// A shipment as the refund (or a GET after one) answers it.
#[derive(Deserialize)]
struct RefundedShipment {
    /// `submitted`, `refunded`, `rejected`, or absent/`not_applicable` before any refund.
    #[serde(default)]
    refund_status: Option<String>,
}

impl RefundedShipment {
    fn refund_status(&self) -> Option<RefundStatus> {
        self.refund_status.as_deref().and_then(RefundStatus::parse)
    }
}

#[derive(Deserialize)]
struct PickupRate {
    carrier: String,
    service: String,
}

#[derive(Deserialize)]
struct CreatedPickup {
    id: String,
    /// `unknown` until bought, then `scheduled` (or `canceled`).
    #[serde(default)]
    status: String,
    /// The carrier's confirmation number once scheduled.
    #[serde(default)]
    confirmation: Option<String>,
    #[serde(default)]
    pickup_rates: Vec<PickupRate>,
}

#[derive(Deserialize)]
struct BoughtPickup {
    confirmation: String,
}

impl EasyPostCarrier {
    pub fn new(settings: EasyPostSettings) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()?;
        Ok(Self { settings, http })
    }

    async fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<T, CarrierError> {
        let url = format!("{}{path}", self.settings.base_url.trim_end_matches('/'));
        let response = self
            .http
            .post(url)
            .basic_auth(self.settings.api_key.expose_secret(), Some(""))
            .json(body)
            .send()
            .await
            .map_err(|error| CarrierError::Unavailable(error.to_string()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|error| CarrierError::Unavailable(error.to_string()))?;
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(CarrierError::Unavailable(format!("{path} answered {status}")));
        }
        if !status.is_success() {
            return Err(CarrierError::Rejected(format!(
                "{path} answered {status}: {text}"
            )));
        }
        serde_json::from_str(&text).map_err(|error| CarrierError::Unavailable(format!("{path}: {error}")))
    }

    async fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, CarrierError> {
        let url = format!("{}{path}", self.settings.base_url.trim_end_matches('/'));
        let response = self
            .http
            .get(url)
            .basic_auth(self.settings.api_key.expose_secret(), Some(""))
            .send()
            .await
            .map_err(|error| CarrierError::Unavailable(error.to_string()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|error| CarrierError::Unavailable(error.to_string()))?;
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(CarrierError::Unavailable(format!("{path} answered {status}")));
        }
        if !status.is_success() {
            return Err(CarrierError::Rejected(format!(
                "{path} answered {status}: {text}"
            )));
        }
        serde_json::from_str(&text).map_err(|error| CarrierError::Unavailable(format!("{path}: {error}")))
    }
}
impl Carrier for EasyPostCarrier {
    async fn create_shipment(&self, purchase: &LabelPurchase) -> Result<String, CarrierError> {
        let created: CreatedShipment = self
            .post(
                "/v2/shipments",
                &json!({ "shipment": {
                    "to_address": address_json(&purchase.ship_to),
                    "from_address": address_json(&purchase.ship_from),
                    "parcel": { "length": 10, "width": 8, "height": 4, "weight": 32 },
                    "reference": purchase.shipment_id.to_string(),
                    "options": { "label_format": "PDF", "print_custom_1": purchase.order_number },
                }}),
            )
            .await?;
        Ok(created.id)
    }

    async fn buy_label(
        &self,
        purchase: &LabelPurchase,
        carrier_shipment_id: &str,
    ) -> Result<PurchasedLabel, CarrierError> {
        let id = if carrier_shipment_id.is_empty() {
            self.create_shipment(purchase).await?
        } else {
            carrier_shipment_id.to_owned()
        };
        let shipment: FetchedShipment = self.get(&format!("/v2/shipments/{id}")).await?;
        if let (Some(tracking_code), Some(selected_rate)) =
            (shipment.tracking_code.clone(), shipment.selected_rate)
        {
            // An earlier attempt bought it and crashed before its commit: that label is ours.
            tracing::warn!(
                shipment = %purchase.shipment_id,
                carrier_shipment = %shipment.id,
                "the carrier's shipment was bought by an interrupted attempt; using that label"
            );
            return Ok(purchased(BoughtShipment {
                id: shipment.id,
                tracking_code,
                selected_rate,
                tracker: shipment.tracker,
            }));
        }
        let rate = shipment
            .rates
            .iter()
            .find(|rate| {
                rate.carrier.eq_ignore_ascii_case(&self.settings.carrier)
                    && rate.service.eq_ignore_ascii_case(&self.settings.service)
            })
            .ok_or_else(|| {
                CarrierError::Rejected(format!(
                    "no {} {} rate for shipment {}",
                    self.settings.carrier, self.settings.service, shipment.id
                ))
            })?;
        let bought: BoughtShipment = self
            .post(
                &format!("/v2/shipments/{}/buy", shipment.id),
                &json!({ "rate": { "id": rate.id } }),
            )
            .await?;
        Ok(purchased(bought))
    }

    async fn create_pickup(&self, booking: &PickupBooking) -> Result<String, CarrierError> {
        let date = booking.date.format("%Y-%m-%d");
        let created: CreatedPickup = self
            .post(
                "/v2/pickups",
                &json!({ "pickup": {
                    "reference": booking.pickup_id.to_string(),
                    "address": address_json(&booking.address),
                    "shipment": { "id": booking.carrier_shipment_id },
                    "min_datetime": format!("{date}T{}:00Z", booking.window.0),
                    "max_datetime": format!("{date}T{}:00Z", booking.window.1),
                    "is_account_address": false,
                    "instructions": format!("Laboratory samples, tracking {}", booking.tracking_number),
                }}),
            )
            .await?;
        Ok(created.id)
    }

    async fn buy_pickup(
        &self,
        booking: &PickupBooking,
        carrier_pickup_id: &str,
    ) -> Result<String, CarrierError> {
        let id = if carrier_pickup_id.is_empty() {
            self.create_pickup(booking).await?
        } else {
            carrier_pickup_id.to_owned()
        };
        let pickup: CreatedPickup = self.get(&format!("/v2/pickups/{id}")).await?;
        if pickup.status.eq_ignore_ascii_case("scheduled")
            && let Some(confirmation) = pickup.confirmation.filter(|number| !number.is_empty())
        {
            // An earlier attempt booked it and crashed before its commit: that booking is ours.
            tracing::warn!(
                pickup = %booking.pickup_id,
                carrier_pickup = %pickup.id,
                "the carrier's pickup was booked by an interrupted attempt; using that booking"
            );
            return Ok(confirmation);
        }
        let rate = pickup
            .pickup_rates
            .first()
            .ok_or_else(|| CarrierError::Rejected(format!("no pickup rate for pickup {}", pickup.id)))?;
        let bought: BoughtPickup = self
            .post(
                &format!("/v2/pickups/{}/buy", pickup.id),
                &json!({ "carrier": rate.carrier, "service": rate.service }),
            )
            .await?;
        Ok(bought.confirmation)
    }

    async fn void_label(
        &self,
        carrier_shipment_id: &str,
        tracking_number: &str,
    ) -> Result<RefundStatus, CarrierError> {
        if carrier_shipment_id.is_empty() {
            return Err(CarrierError::Rejected(format!(
                "label {tracking_number} has no EasyPost shipment to refund"
            )));
        }
        let path = format!("/v2/shipments/{carrier_shipment_id}");
        let shipment: RefundedShipment = self.get(&path).await?;
        if let Some(status) = shipment.refund_status() {
            // An earlier attempt voided it and crashed before our commit: that answer stands.
            return Ok(status);
        }
        let refunded: RefundedShipment = self.post(&format!("{path}/refund"), &json!({})).await?;
        refunded.refund_status().ok_or_else(|| {
            CarrierError::Unavailable(format!(
                "{path}/refund answered no refund status ({:?})",
                refunded.refund_status
            ))
        })
    }

    async fn cancel_pickup(&self, carrier_pickup_id: &str) -> Result<(), CarrierError> {
        if carrier_pickup_id.is_empty() {
            return Ok(());
        }
        let pickup: CreatedPickup = self.get(&format!("/v2/pickups/{carrier_pickup_id}")).await?;
        if pickup.status.eq_ignore_ascii_case("canceled") {
            return Ok(());
        }
        let _: CreatedPickup = self
            .post(&format!("/v2/pickups/{carrier_pickup_id}/cancel"), &json!({}))
            .await?;
        Ok(())
    }
}

/// Our view of a bought EasyPost shipment.
fn purchased(bought: BoughtShipment) -> PurchasedLabel {
    PurchasedLabel {
        carrier_code: bought.selected_rate.carrier.to_lowercase(),
        carrier_name: bought.selected_rate.carrier.clone(),
        service_code: format!(
            "{}_{}",
            bought.selected_rate.carrier.to_lowercase(),
            bought.selected_rate.service.to_lowercase()
        ),
        service_name: bought.selected_rate.service.clone(),
        tracking_url: bought
            .tracker
            .map(|tracker| tracker.public_url)
            .unwrap_or_default(),
        tracking_number: bought.tracking_code,
        carrier_shipment_id: bought.id,
    }
}
