//! The lab's steps played on a sandbox customer's own order (docs/sandbox.md), through the very
//! use cases lab staff run ([`super::lab`]), so the order moves, custody is written and
//! `sample.received` / `testing.started` / `order.status_changed` are emitted as for a real
//! receipt:
//!
//! * find the customer's order (another customer's, or a live order, is `not_found`);
//! * `received`: one receipt per line (two intact units in the line's expected containers,
//!   stored in the sandbox's cold store), under the label's tracking number — refused with
//!   `scenario_not_applicable` unless the order awaits its samples with a label bought;
//! * `testing`: the start of testing — refused unless the samples were received.
//!
//! Playing a step again answers `unchanged` (the staff steps are idempotent the same way).

use super::OrdersService;
use super::lab::LabStep;
use crate::domain::order::Order;
use crate::domain::reference::OrderReference;
use crate::domain::sample::UncheckedReceipt;
use crate::domain::status::{Lifecycle, OrderStatus};
use crate::repo;
use platform::error::{ApiError, ErrorCode};
use proto::common::Simulation;
use uuid::Uuid;

/// The actor the custody entries of simulated steps name.
pub const SIMULATOR: &str = "sandbox-simulator";
/// Where simulated samples are stored.
const SANDBOX_STORAGE: &str = "SANDBOX-COLD-1";

/// A lab step a sandbox customer may play.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabScenario {
    Received,
    Testing,
}

impl LabScenario {
    /// Parses `received` or `testing`.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        match text {
            "received" => Ok(Self::Received),
            "testing" => Ok(Self::Testing),
            _ => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "scenario",
                "orders-svc plays the scenarios received and testing",
            )),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Received => "received",
            Self::Testing => "testing",
        }
    }
}

/// `scenario_not_applicable` for `scenario` on an order in `status`, which needs `needs`.
pub fn not_applicable(scenario: &str, status: &str, needs: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ScenarioNotApplicable,
        format!(
            "the scenario {scenario} does not fit the order now: it is {status}; {scenario} needs {needs}"
        ),
    )
    .with_details(serde_json::json!({ "scenario": scenario, "status": status, "needs": needs }))
}

fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "order not found")
}

impl OrdersService {
    /// The sandbox order `reference` of `customer_id`; `not_found` for any other order.
    pub async fn find_sandbox_order(&self, customer_id: Uuid, reference: &str) -> Result<Order, ApiError> {
        let reference = OrderReference::parse(reference).ok_or_else(not_found)?;
        let mut conn = self.pool.acquire().await?;
        repo::find_order(&mut conn, customer_id, &reference)
            .await?
            .filter(|order| order.sandbox)
            .ok_or_else(not_found)
    }

    /// Plays `scenario` on the sandbox order `reference` of `customer_id`.
    pub async fn simulate_lab_step(
        &self,
        customer_id: Uuid,
        reference: &str,
        scenario: LabScenario,
    ) -> Result<Simulation, ApiError> {
        let order = self.find_sandbox_order(customer_id, reference).await?;
        let mut conn = self.pool.acquire().await?;
        let tracking: Option<String> = sqlx::query_scalar(
            "SELECT tracking_number FROM orders.order_shipping WHERE customer_id = $1 AND order_id = $2",
        )
        .bind(customer_id)
        .bind(order.id)
        .fetch_optional(&mut *conn)
        .await?;
        drop(conn);
        let id = order.id.to_string();
        let step = match scenario {
            LabScenario::Received => {
                let tracking = check_receivable(&order, tracking)?;
                let receipts = receipts_of(&order);
                self.receive_samples(SIMULATOR, &id, &tracking, receipts).await?
            }
            LabScenario::Testing => {
                let started = matches!(
                    order.status,
                    OrderStatus::SampleReceived
                        | OrderStatus::InLab
                        | OrderStatus::Reporting
                        | OrderStatus::Completed
                );
                if !started {
                    return Err(not_applicable(
                        "testing",
                        order.status.as_str(),
                        "the samples received (play received first)",
                    ));
                }
                self.start_testing(SIMULATOR, &id).await?
            }
        };
        Ok(simulation(scenario, &step))
    }
}

/// The label's tracking number when the order awaits its samples; `scenario_not_applicable`
/// otherwise (a receipt already logged answers unchanged through the staff step).
fn check_receivable(order: &Order, tracking: Option<String>) -> Result<String, ApiError> {
    if !order.accession_numbers.is_empty() {
        return Ok(tracking.unwrap_or_default());
    }
    if !order.status.is_before_lab() {
        return Err(not_applicable(
            "received",
            order.status.as_str(),
            "an order awaiting its samples",
        ));
    }
    tracking.ok_or_else(|| {
        not_applicable(
            "received",
            order.status.as_str(),
            "the prepaid label (on the stablecoin rail it is bought once the payment settles)",
        )
    })
}

/// One receipt per line: two intact units in the line's first expected container.
fn receipts_of(order: &Order) -> Vec<UncheckedReceipt> {
    order
        .lines
        .iter()
        .map(|line| UncheckedReceipt {
            line_number: line.line_number,
            units: 2,
            containers: line.sample_requirements.first().map_or_else(
                || "2 x sample container".to_owned(),
                |requirement| format!("2 x {}", requirement.container),
            ),
            condition: "intact".into(),
            storage_location: format!("{SANDBOX_STORAGE}/L{}", line.line_number),
        })
        .collect()
}

fn simulation(scenario: LabScenario, step: &LabStep) -> Simulation {
    let events = if step.unchanged {
        Vec::new()
    } else {
        let kind = match scenario {
            LabScenario::Received => "sample.received",
            LabScenario::Testing => "testing.started",
        };
        vec![kind.to_owned(), "order.status_changed".to_owned()]
    };
    Simulation {
        scenario: scenario.as_str().to_owned(),
        order_id: step.order.id.to_string(),
        status: step.order.status.as_str().to_owned(),
        subject: "order".into(),
        events,
        unchanged: step.unchanged,
        ids: step
            .samples
            .iter()
            .map(|sample| {
                (
                    format!("line{}.accessionNumber", sample.line_number),
                    sample.accession_number.clone(),
                )
            })
            .collect(),
    }
}
