//! The COA workflow played on a sandbox customer's own order (docs/sandbox.md), step by step
//! through the very use cases lab staff run ([`super::workflow`]), so signatures, custody,
//! `coa.published` / `results.published` and the order's moves are the real ones:
//!
//! * `coa_published`: for every sample of the order, generated passing results for each of
//!   its tests are recorded by the sandbox analyst and submitted, approved by the sandbox QA
//!   officer (another operator: four eyes hold) and published — held, as any COA, while the
//!   order is unpaid. A step already taken is skipped; a sample whose COA is out already answers
//!   unchanged.
//! * `coa_amended`: every sample's published COA is amended (a new version with one result
//!   re-measured), which goes through the same record, submit, approve and publish steps; the
//!   original becomes superseded. Each play amends again.
//!
//! Refused with `scenario_not_applicable` before testing started (results-svc learns of the
//! samples from orders-svc's events, a moment after `testing` answers) and, for
//! `coa_amended`, before a COA of every sample was published.

use super::{ResultsService, Step};
use crate::domain::analyte::UncheckedRow;
use crate::domain::coa::CoaStatus;
use crate::repo;
use platform::error::{ApiError, ErrorCode};
use platform::principal::OperatorRef;
use proto::common::Simulation;
use uuid::Uuid;

/// The sandbox analyst who records and submits simulated results.
const ANALYST: (Uuid, &str) = (
    Uuid::from_u128(0x5a4d_b0c5_0000_4000_8000_0000_0000_a001),
    "sandbox-analyst",
);
/// The sandbox QA officer who approves and publishes them (never the analyst).
const QA: (Uuid, &str) = (
    Uuid::from_u128(0x5a4d_b0c5_0000_4000_8000_0000_0000_a002),
    "sandbox-qa",
);
/// The reason of a simulated amendment.
const AMENDMENT_REASON: &str = "sandbox simulation: one result re-measured";

fn operator((id, name): (Uuid, &str)) -> OperatorRef {
    OperatorRef {
        id,
        name: name.to_owned(),
    }
}

/// A COA scenario a sandbox customer may play.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoaScenario {
    Published,
    Amended,
}

impl CoaScenario {
    /// Parses `coa_published` or `coa_amended`.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        match text {
            "coa_published" => Ok(Self::Published),
            "coa_amended" => Ok(Self::Amended),
            _ => Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "scenario",
                "results-svc plays the scenarios coa_published and coa_amended",
            )),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Published => "coa_published",
            Self::Amended => "coa_amended",
        }
    }
}

fn not_applicable(scenario: CoaScenario, status: &str, needs: &str) -> ApiError {
    let scenario = scenario.as_str();
    ApiError::new(
        ErrorCode::ScenarioNotApplicable,
        format!("the scenario {scenario} does not fit the order now: {status}; {scenario} needs {needs}"),
    )
    .with_details(serde_json::json!({ "scenario": scenario, "status": status, "needs": needs }))
}

/// A plausible passing result of `test_id` (the same value for the same test).
fn generated_row(test_id: &str, bump: bool) -> UncheckedRow {
    let seed = test_id.bytes().fold(7u32, |hash, byte| {
        hash.wrapping_mul(31).wrapping_add(u32::from(byte))
    });
    let tenths = 985 + seed % 14 + u32::from(bump);
    UncheckedRow {
        analyte: format!("{test_id} assay"),
        test_id: test_id.to_owned(),
        value: Some(format!("{}.{}", tenths / 10, tenths % 10)),
        qualifier: None,
        unit: "%".into(),
        loq: Some("0.05".into()),
        lod: Some("0.02".into()),
        specification: Some(">= 98.0".into()),
        outcome: Some("pass".into()),
        method: "HPLC-UV (USP <621>)".into(),
        instrument: "SANDBOX-HPLC-1".into(),
        measured_at: Some(platform::time::now()),
    }
}

impl ResultsService {
    /// Plays `scenario` on every sample of the sandbox order `order_id` of `customer_id`.
    pub async fn simulate_coa(
        &self,
        customer_id: Uuid,
        order_id: Uuid,
        scenario: CoaScenario,
    ) -> Result<Simulation, ApiError> {
        let samples: Vec<(String, Option<chrono::DateTime<chrono::Utc>>)> = sqlx::query_as(
            "SELECT accession_number, testing_started_at FROM results.samples \
             WHERE customer_id = $1 AND order_id = $2 ORDER BY line_number",
        )
        .bind(customer_id)
        .bind(order_id)
        .fetch_all(&self.pool)
        .await?;
        if samples.is_empty() || samples.iter().any(|(_, started)| started.is_none()) {
            return Err(not_applicable(
                scenario,
                "testing has not started for its samples (or results-svc has not heard of it yet)",
                "the samples in testing (play received and testing; retry a moment after testing answers)",
            ));
        }
        let mut simulation = Simulation {
            scenario: scenario.as_str().to_owned(),
            order_id: order_id.to_string(),
            subject: "coa".into(),
            unchanged: true,
            ..Simulation::default()
        };
        for (accession, _) in &samples {
            let step = match scenario {
                CoaScenario::Published => self.publish_generated(accession).await?,
                CoaScenario::Amended => self.amend_published(accession).await?,
            };
            if !step.unchanged {
                simulation.unchanged = false;
                if step.coa.status == CoaStatus::Published {
                    simulation.events.push("coa.published".into());
                    simulation.events.push("results.published".into());
                }
            }
            simulation.status = step.coa.status.as_str().to_owned();
            simulation
                .ids
                .insert(format!("{accession}.coaId"), step.coa.id.to_string());
        }
        Ok(simulation)
    }

    /// Takes the sample's current COA through the workflow steps it still needs.
    async fn publish_generated(&self, accession: &str) -> Result<Step, ApiError> {
        let analyst = operator(ANALYST);
        let current = {
            let mut conn = self.pool.acquire().await?;
            repo::lock_current_coa(&mut conn, accession).await?
        };
        match current.as_ref().map(|coa| coa.status) {
            Some(CoaStatus::Held | CoaStatus::Published) => {
                let coa = current.ok_or_else(|| ApiError::internal("a COA vanished"))?;
                return Ok(Step { coa, unchanged: true });
            }
            Some(CoaStatus::Retracted | CoaStatus::Superseded) => {
                return Err(not_applicable(
                    CoaScenario::Published,
                    "its COA was retracted",
                    "a sample without a published COA (play coa_amended)",
                ));
            }
            None | Some(CoaStatus::Draft) => {
                let sample = {
                    let mut conn = self.pool.acquire().await?;
                    repo::find_sample(&mut conn, accession).await?
                }
                .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "sample not found"))?;
                let rows = sample
                    .test_ids
                    .iter()
                    .map(|test| generated_row(test, false))
                    .collect();
                self.record_results(&analyst, accession, rows).await?;
                self.submit_results(&analyst, accession).await?;
            }
            Some(CoaStatus::Submitted | CoaStatus::Approved) => {}
        }
        self.approve_and_publish(accession).await
    }

    /// Amends the sample's published COA and publishes the amendment.
    async fn amend_published(&self, accession: &str) -> Result<Step, ApiError> {
        let current = {
            let mut conn = self.pool.acquire().await?;
            repo::lock_current_coa(&mut conn, accession).await?
        };
        let Some(current) = current else {
            return Err(not_applicable(
                CoaScenario::Amended,
                "no COA was published yet",
                "a published COA (play coa_published first)",
            ));
        };
        let analyst = operator(ANALYST);
        match current.status {
            CoaStatus::Published | CoaStatus::Retracted => {
                let amendment = self
                    .amend_coa(&current.id.to_string(), AMENDMENT_REASON)
                    .await?
                    .coa;
                let first = amendment
                    .results
                    .first()
                    .ok_or_else(|| ApiError::internal("an amendment without results"))?;
                let remeasured = UncheckedRow {
                    analyte: first.analyte.clone(),
                    ..generated_row(&first.test_id, true)
                };
                self.record_results(&analyst, accession, vec![remeasured]).await?;
                self.submit_results(&analyst, accession).await?;
            }
            CoaStatus::Draft if current.amends.is_some() => {
                self.submit_results(&analyst, accession).await?;
            }
            CoaStatus::Submitted | CoaStatus::Approved if current.amends.is_some() => {}
            _ => {
                return Err(not_applicable(
                    CoaScenario::Amended,
                    &format!("its COA is {}", current.status.as_str()),
                    "a published COA (play coa_published first)",
                ));
            }
        }
        self.approve_and_publish(accession).await
    }

    async fn approve_and_publish(&self, accession: &str) -> Result<Step, ApiError> {
        self.approve_results(&operator(QA), accession).await?;
        let step = self.publish_coa(accession).await?;
        Ok(Step {
            unchanged: false,
            ..step
        })
    }
}
