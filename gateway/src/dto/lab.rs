//! Shapes of an order's lab side: its sample items, its chain of custody and its ETA.

use super::common::{optional_time, required_time, rfc3339, rfc3339_opt, single_envelope};
use super::orders::{Order, StatusChange};
use chrono::{DateTime, Utc};
use platform::error::ApiError;
use proto::common::OrderStatus;
use proto::enums::shown;
use proto::orders as pb;
use serde::Serialize;
use utoipa::ToSchema;

/// A sample item of an order: one per order line from the moment the order exists, awaiting
/// receipt with what the lab expects, then as the lab logged it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// Accession number assigned by the lab at receipt (`ACC-…`; also a reference of the order
    /// and results); `null` while awaiting receipt.
    pub accession_number: Option<String>,
    pub line_number: i32,
    pub compound_name: String,
    pub lot_number: Option<String>,
    /// `awaiting_receipt`, `received`, `in_testing`, `reported` (a published COA in force) or
    /// `disposed`.
    pub status: String,
    /// What the lab expects for the line: `<amount> — <container> (<notes>)` per sample
    /// requirement of its tests.
    pub expected_containers: Vec<String>,
    /// Units logged at receipt; `null` while awaiting receipt.
    pub units: Option<i32>,
    /// Containers as received; `null` while awaiting receipt.
    pub containers: Option<String>,
    /// `intact`, `damaged`, `temperature_excursion` or `insufficient`; `null` while awaiting receipt.
    pub condition: Option<String>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub received_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub testing_started_at: Option<DateTime<Utc>>,
    /// When the retained portion may be discarded; `null` while awaiting receipt.
    #[serde(serialize_with = "rfc3339_opt")]
    pub retain_until: Option<DateTime<Utc>>,
    /// When the lab disposed of the retained portion (after `retainUntil`); null while retained.
    #[serde(serialize_with = "rfc3339_opt")]
    pub disposed_at: Option<DateTime<Utc>>,
    /// Catalog test ids and test or bundle names of the line.
    pub test_ids: Vec<String>,
    pub tests: Vec<String>,
    /// How the sample got to its status, oldest first.
    pub status_history: Vec<SampleStatusChange>,
    /// Published COAs of this sample (ids), newest first; listed for keys with `results:read`.
    pub coa_ids: Vec<String>,
}

/// One move of a sample item.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SampleStatusChange {
    /// `received`, `in_testing`, `reported` or `disposed`.
    pub status: String,
    #[serde(serialize_with = "rfc3339")]
    pub at: DateTime<Utc>,
}

impl TryFrom<pb::Sample> for Sample {
    type Error = ApiError;

    fn try_from(sample: pb::Sample) -> Result<Self, ApiError> {
        let received = !sample.accession_number.is_empty();
        let non_empty = |text: String| (received && !text.is_empty()).then_some(text);
        Ok(Self {
            received_at: optional_time(sample.received_at.as_ref()),
            retain_until: optional_time(sample.retain_until.as_ref()),
            testing_started_at: optional_time(sample.testing_started_at.as_ref()),
            disposed_at: optional_time(sample.disposed_at.as_ref()),
            status_history: sample
                .status_history
                .into_iter()
                .map(|change| {
                    Ok(SampleStatusChange {
                        at: required_time(change.at.as_ref(), "sample status change at")?,
                        status: change.status,
                    })
                })
                .collect::<Result<_, ApiError>>()?,
            status: if sample.status.is_empty() {
                "received".to_owned()
            } else {
                sample.status
            },
            expected_containers: sample.expected_containers,
            units: received.then_some(sample.units),
            containers: non_empty(sample.containers),
            condition: non_empty(sample.condition),
            accession_number: received.then_some(sample.accession_number),
            line_number: sample.line_number,
            compound_name: sample.compound_name,
            lot_number: sample.lot_number,
            test_ids: sample.test_ids,
            tests: sample.test_names,
            coa_ids: Vec::new(),
        })
    }
}

/// `GET /orders/{reference}/samples`: the order's status and history and its sample items.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderSamples {
    pub order_id: String,
    pub order_number: String,
    pub status: String,
    pub status_history: Vec<StatusChange>,
    /// One item per order line, in line order.
    pub samples: Vec<Sample>,
}

single_envelope!(OrderSamplesEnvelope, OrderSamplesData, order_samples: OrderSamples);

impl OrderSamples {
    /// The samples view of `order`.
    pub fn new(order: Order, samples: Vec<Sample>) -> Self {
        Self {
            order_id: order.id,
            order_number: order.order_number,
            status: order.status,
            status_history: order.status_history,
            samples,
        }
    }
}

/// One chain-of-custody entry. `hash` = SHA-256 (hex) over `previousHash`, `sequence`,
/// `occurredAt`, `action`, `accessionNumber`, `actor`, `location` and `details`, each followed by
/// the byte 0x1F; the first entry's `previousHash` is 64 zeros.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustodyEntry {
    pub sequence: i64,
    #[serde(serialize_with = "rfc3339")]
    pub occurred_at: DateTime<Utc>,
    /// `received`, `stored`, `testing_started`.
    pub action: String,
    pub accession_number: String,
    pub actor: String,
    pub location: String,
    pub details: String,
    pub previous_hash: String,
    pub hash: String,
}

/// `GET /orders/{reference}/custody`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Custody {
    pub order_id: String,
    pub order_number: String,
    pub entries: Vec<CustodyEntry>,
    /// True when every hash recomputes and links to its predecessor.
    pub chain_intact: bool,
    /// Retention deadline of the retained samples; `null` before receipt.
    #[serde(serialize_with = "rfc3339_opt")]
    pub retain_until: Option<DateTime<Utc>>,
}

/// `{ "data": { "custody": … } }`
#[derive(Serialize, ToSchema)]
pub struct CustodyEnvelope {
    pub data: CustodyData,
}

/// The `data` object of a custody answer.
#[derive(Serialize, ToSchema)]
pub struct CustodyData {
    pub custody: Custody,
}

impl TryFrom<pb::GetCustodyResponse> for Custody {
    type Error = ApiError;

    fn try_from(response: pb::GetCustodyResponse) -> Result<Self, ApiError> {
        let order = response.order.unwrap_or_default();
        let entries = response
            .entries
            .into_iter()
            .map(|entry| {
                Ok(CustodyEntry {
                    occurred_at: required_time(entry.occurred_at.as_ref(), "custody occurredAt")?,
                    sequence: entry.sequence,
                    action: entry.action,
                    accession_number: entry.accession_number,
                    actor: entry.actor,
                    location: entry.location,
                    details: entry.details,
                    previous_hash: entry.previous_hash,
                    hash: entry.hash,
                })
            })
            .collect::<Result<_, ApiError>>()?;
        Ok(Self {
            order_id: order.id,
            order_number: order.order_number,
            entries,
            chain_intact: response.chain_intact,
            retain_until: optional_time(response.retain_until.as_ref()),
        })
    }
}

/// One stage of an order's progress.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtaStage {
    /// `ordered`, `payment`, `samples_received`, `testing`, `reporting`, `completed`.
    pub stage: String,
    /// `done`, `in_progress` or `pending`.
    pub state: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub at: Option<DateTime<Utc>>,
    /// Non-binding estimate.
    #[serde(serialize_with = "rfc3339_opt")]
    pub estimated_at: Option<DateTime<Utc>>,
}

/// `GET /orders/{reference}/eta`: stage-by-stage progress with a non-binding ETA.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Eta {
    pub order_id: String,
    pub order_number: String,
    pub status: String,
    /// `unpaid` or `paid` (payment gates only the release of COAs).
    pub payment_state: String,
    pub stages: Vec<EtaStage>,
    /// Non-binding; `null` until the samples are received.
    #[serde(serialize_with = "rfc3339_opt")]
    pub estimated_completion: Option<DateTime<Utc>>,
    pub turnaround_business_days: i32,
    /// How the estimate was made.
    pub basis: String,
}

/// `{ "data": { "eta": … } }`
#[derive(Serialize, ToSchema)]
pub struct EtaEnvelope {
    pub data: EtaData,
}

/// The `data` object of an ETA answer.
#[derive(Serialize, ToSchema)]
pub struct EtaData {
    pub eta: Eta,
}

impl From<pb::GetEtaResponse> for Eta {
    fn from(response: pb::GetEtaResponse) -> Self {
        let order = response.order.unwrap_or_default();
        Self {
            order_id: order.id,
            order_number: order.order_number,
            status: shown::<OrderStatus>(order.status, order.legacy_status),
            payment_state: order.payment_state,
            stages: response
                .stages
                .into_iter()
                .map(|stage| EtaStage {
                    at: optional_time(stage.at.as_ref()),
                    estimated_at: optional_time(stage.estimated_at.as_ref()),
                    stage: stage.stage,
                    state: stage.state,
                })
                .collect(),
            estimated_completion: optional_time(response.estimated_completion.as_ref()),
            turnaround_business_days: response.turnaround_business_days,
            basis: response.basis,
        }
    }
}
