//! Shapes of the sandbox simulation (`POST /orders/{reference}/simulate`, docs/sandbox.md).

use super::common::single_envelope;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A lifecycle scenario a sandbox customer may play on its own order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// The carrier's scans up to delivery at the lab (`shipment.updated`; the order goes
    /// `in_transit`).
    Delivered,
    /// The carrier's scans up to the parcel declared lost (`shipment.updated`).
    LostInTransit,
    /// The lab logs one sample per line (`sample.received`, order `sample_received`).
    Received,
    /// Testing starts (`testing.started`, order `in_lab`).
    Testing,
    /// Generated passing results are recorded, approved and published for every sample
    /// (`coa.published`, `results.published`; held while the order is unpaid).
    CoaPublished,
    /// Every published COA is amended with one result re-measured and the amendment published
    /// (`coa.published` of the new version; the original becomes superseded).
    CoaAmended,
    /// A card is declined on the card order's open checkout session (the pay page shows it; a
    /// decline is no event).
    CardDeclined,
    /// The observed transfer of the stablecoin order's confirming payment request leaves the
    /// chain (`payment.reorged`; the request awaits a transfer again).
    StablecoinReorg,
}

impl Scenario {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::Delivered => "delivered",
            Scenario::LostInTransit => "lost_in_transit",
            Scenario::Received => "received",
            Scenario::Testing => "testing",
            Scenario::CoaPublished => "coa_published",
            Scenario::CoaAmended => "coa_amended",
            Scenario::CardDeclined => "card_declined",
            Scenario::StablecoinReorg => "stablecoin_reorg",
        }
    }
}

/// Body of `POST /orders/{reference}/simulate`. No other properties are allowed.
#[derive(Deserialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulateRequest {
    /// The scenario to play.
    pub scenario: Scenario,
}

/// What one simulated scenario did.
#[derive(Serialize, ToSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Simulation {
    pub scenario: Scenario,
    pub order_id: String,
    /// What `status` is the status of: `order`, `shipment`, `coa` or `payment`.
    pub subject: String,
    /// The subject's status after the scenario.
    pub status: String,
    /// The event kinds the scenario caused, in order; they reach webhooks like any other.
    pub events: Vec<String>,
    /// `true` when the scenario had already been played: nothing new happened.
    pub unchanged: bool,
    /// Ids the scenario touched, by name (`trackingNumber`, `line1.accessionNumber`,
    /// `<accession>.coaId`).
    pub ids: BTreeMap<String, String>,
}

impl Simulation {
    /// The gateway's shape of a service's answer.
    pub fn of(scenario: Scenario, simulation: proto::common::Simulation) -> Self {
        Self {
            scenario,
            order_id: simulation.order_id,
            subject: simulation.subject,
            status: simulation.status,
            events: simulation.events,
            unchanged: simulation.unchanged,
            ids: simulation.ids.into_iter().collect(),
        }
    }
}

single_envelope!(SimulationEnvelope, SimulationData, simulation: Simulation);
