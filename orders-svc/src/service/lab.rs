//! The lab's steps on an order (staff, lab-wide) and the customer's reads of them.
//!
//! * Receive samples: find the order → lock it → an identical earlier receipt answers again
//!   (idempotent), another one is a conflict → check one receipt per line → assign accession
//!   numbers → samples, custody entries (received, stored), `sample_received` and
//!   `sample.received` in one transaction.
//! * Start testing: `sample_received` → `in_lab` with custody entries and `testing.started`;
//!   an order already in the lab answers again unchanged.
//! * Dispose of a sample's retained portion once its retention period ended: a custody entry
//!   `disposed`; a sample already disposed answers again unchanged.
//! * A published COA (results-svc's `coa.published`): a custody entry `coa_published`,
//!   `in_lab → reporting`, and `completed` once every sample has a COA in force.
//! * A retracted COA (results-svc's `coa.retracted`): a custody entry `coa_retracted`, and a
//!   `completed` order that no longer has a COA in force for every sample goes back to
//!   `reporting` (an amendment's publication completes it again).

use super::OrdersService;
use super::transition::transition;
use crate::domain::order::Order;
use crate::domain::reference::OrderReference;
use crate::domain::sample::{self, CustodyFacts, Sample, UncheckedReceipt};
use crate::domain::status::{Lifecycle, OrderStatus};
use crate::repo::{self, samples as sample_repo};
use crate::{OUTBOX, SCHEMA, events};
use chrono::{DateTime, Utc};
use platform::consumer::first_delivery;
use platform::error::{ApiError, ErrorCode};
use platform::streams::GROUP_ORDERS;
use sqlx::PgConnection;
use uuid::Uuid;

/// Reason recorded when samples are received.
pub const REASON_SAMPLE_RECEIVED: &str = "sample.received";
/// Reason recorded when testing starts.
pub const REASON_TESTING_STARTED: &str = "testing.started";
/// Reason recorded when a COA publication moves the order.
pub const REASON_COA_PUBLISHED: &str = "coa.published";
/// Reason recorded when a COA retraction moves the order back.
pub const REASON_COA_RETRACTED: &str = "coa.retracted";
/// Actor of the custody entries of COA publication and retraction.
pub const RESULTS_ACTOR: &str = "results-svc";
/// Location of the custody entries of COA publication and retraction.
pub const QA_LOCATION: &str = "Quality assurance";

/// What a customer reads about the samples of an order.
pub struct SampleView {
    pub order: Order,
    pub samples: Vec<Sample>,
    /// The published COAs of its samples (for each item's status).
    pub coas: Vec<crate::domain::sample_items::CoaMark>,
}

/// The chain of custody of an order.
pub struct CustodyView {
    pub order: Order,
    pub entries: Vec<sample_repo::CustodyRow>,
    pub chain_intact: bool,
    pub retain_until: Option<DateTime<Utc>>,
}

/// A published COA as orders-svc learns it from `coa.published`.
pub struct PublishedCoa<'a> {
    pub accession_number: &'a str,
    pub coa_id: Uuid,
    pub version: i32,
    /// The COA it amends (and supersedes).
    pub amends: Option<Uuid>,
    pub published_at: DateTime<Utc>,
    /// The catalog test ids the COA reports (add-ons it covers become `reported`).
    pub test_ids: &'a [String],
}

/// A retracted COA as orders-svc learns it from `coa.retracted`.
pub struct RetractedCoa<'a> {
    pub accession_number: &'a str,
    pub coa_id: Uuid,
    pub retracted_at: DateTime<Utc>,
    pub reason: &'a str,
}

/// The outcome of a disposal: the order, the sample after it and whether it had already happened.
pub struct Disposal {
    pub order: Order,
    pub sample: Sample,
    pub unchanged: bool,
}

/// The outcome of a staff step: the order after it and whether it had already happened.
pub struct LabStep {
    pub order: Order,
    pub samples: Vec<Sample>,
    pub unchanged: bool,
}

fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "order not found")
}

fn conflict(message: String, status: OrderStatus) -> ApiError {
    ApiError::new(ErrorCode::Conflict, message).with_details(serde_json::json!({ "status": status.as_str() }))
}

/// Locks an order found lab-wide; returns (customer, id, status, number).
async fn lock_for_staff(
    tx: &mut PgConnection,
    reference: &str,
) -> Result<(Uuid, Uuid, OrderStatus, String), ApiError> {
    let reference = OrderReference::parse(reference).ok_or_else(not_found)?;
    let (customer_id, order_id) = sample_repo::find_order_for_staff(tx, &reference)
        .await?
        .ok_or_else(not_found)?;
    let (status, number) = repo::lock_order(tx, customer_id, order_id)
        .await?
        .ok_or_else(not_found)?;
    Ok((customer_id, order_id, status, number))
}

async fn read_order(conn: &mut PgConnection, customer_id: Uuid, order_id: Uuid) -> Result<Order, ApiError> {
    repo::find_order(conn, customer_id, &OrderReference::Id(order_id))
        .await?
        .ok_or_else(not_found)
}

fn same_receipt(existing: &[Sample], receipts: &[UncheckedReceipt]) -> bool {
    existing.len() == receipts.len()
        && receipts.iter().all(|receipt| {
            existing.iter().any(|sample| {
                sample.line_number == receipt.line_number
                    && sample.units == receipt.units
                    && sample.containers == receipt.containers.trim()
                    && sample.condition == receipt.condition
                    && sample.storage_location == receipt.storage_location.trim()
            })
        })
}

impl OrdersService {
    /// Logs a shipment's samples against an order as `operator`.
    pub async fn receive_samples(
        &self,
        operator: &str,
        reference: &str,
        tracking_number: &str,
        receipts: Vec<UncheckedReceipt>,
    ) -> Result<LabStep, ApiError> {
        if tracking_number.chars().count() > 100 {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "trackingNumber",
                "trackingNumber must be at most 100 characters",
            ));
        }
        let mut tx = self.pool.begin().await?;
        let (customer_id, order_id, status, number) = lock_for_staff(&mut tx, reference).await?;
        let existing = sample_repo::list_samples(&mut tx, customer_id, order_id).await?;
        if !existing.is_empty() {
            if !same_receipt(&existing, &receipts) {
                return Err(conflict(
                    format!("the samples of order {number} were already received differently"),
                    status,
                ));
            }
            let order = read_order(&mut tx, customer_id, order_id).await?;
            tx.commit().await?;
            return Ok(LabStep {
                order,
                samples: existing,
                unchanged: true,
            });
        }
        if !status.is_before_lab() {
            return Err(conflict(
                format!("order {number} is {status}; samples cannot be received"),
                status,
            ));
        }
        let order = read_order(&mut tx, customer_id, order_id).await?;
        let lines: Vec<i32> = order.lines.iter().map(|line| line.line_number).collect();
        let receipts = sample::check_receipts(receipts, &lines)?;
        let now = platform::time::now();
        let mut samples = Vec::with_capacity(receipts.len());
        let mut custody = Vec::with_capacity(receipts.len() * 2);
        for receipt in receipts {
            let line = order
                .lines
                .iter()
                .find(|line| line.line_number == receipt.line_number)
                .ok_or_else(not_found)?;
            let sequence = sample_repo::next_accession_sequence(&mut tx).await?;
            let accession = sample::accession_number(now, sequence);
            let mut test_ids: Vec<String> = Vec::new();
            for test in line.items.iter().flat_map(|item| item.test_ids.iter()) {
                if !test_ids.contains(test) {
                    test_ids.push(test.clone());
                }
            }
            custody.push(CustodyFacts {
                sequence: 0,
                occurred_at: now,
                action: "received".into(),
                accession_number: accession.clone(),
                actor: operator.to_owned(),
                location: "Sample receiving".into(),
                details: format!(
                    "{} unit(s), {}, condition {}, tracking {}",
                    receipt.units,
                    receipt.containers,
                    receipt.condition,
                    if tracking_number.is_empty() {
                        "none"
                    } else {
                        tracking_number
                    }
                ),
            });
            custody.push(CustodyFacts {
                sequence: 0,
                occurred_at: now,
                action: "stored".into(),
                accession_number: accession.clone(),
                actor: operator.to_owned(),
                location: receipt.storage_location.clone(),
                details: format!(
                    "retained portion kept until {}",
                    platform::time::rfc3339(sample::retain_until(now))
                ),
            });
            samples.push(Sample {
                accession_number: accession,
                line_number: receipt.line_number,
                compound_name: line.compound_name.clone(),
                lot_number: line.lot_number.clone(),
                units: receipt.units,
                containers: receipt.containers,
                condition: receipt.condition,
                storage_location: receipt.storage_location,
                received_at: now,
                received_by: operator.to_owned(),
                testing_started_at: None,
                retain_until: sample::retain_until(now),
                disposed_at: None,
                test_ids,
                test_names: line.items.iter().map(|item| item.name.clone()).collect(),
            });
        }
        sample_repo::insert_samples(&mut tx, customer_id, order_id, tracking_number, &samples).await?;
        sample_repo::append_custody(&mut tx, customer_id, order_id, custody).await?;
        transition(
            &mut tx,
            (customer_id, order_id),
            &number,
            status,
            OrderStatus::SampleReceived,
            REASON_SAMPLE_RECEIVED,
        )
        .await?;
        OUTBOX
            .enqueue(
                &mut tx,
                events::sample_received(
                    customer_id,
                    (order_id, &number),
                    tracking_number,
                    operator,
                    &samples,
                ),
            )
            .await?;
        let order = read_order(&mut tx, customer_id, order_id).await?;
        repo::view::store(&mut tx, &order).await?;
        tx.commit().await?;
        Ok(LabStep {
            order,
            samples,
            unchanged: false,
        })
    }

    /// Moves a received order into the lab as `operator`.
    pub async fn start_testing(&self, operator: &str, reference: &str) -> Result<LabStep, ApiError> {
        let mut tx = self.pool.begin().await?;
        let (customer_id, order_id, status, number) = lock_for_staff(&mut tx, reference).await?;
        let unchanged = match status {
            OrderStatus::InLab | OrderStatus::Reporting | OrderStatus::Completed => true,
            OrderStatus::SampleReceived => false,
            other => {
                return Err(conflict(
                    format!("order {number} is {other}; testing starts once its samples are received"),
                    other,
                ));
            }
        };
        if !unchanged {
            let now = platform::time::now();
            let samples = sample_repo::list_samples(&mut tx, customer_id, order_id).await?;
            sample_repo::mark_testing_started(&mut tx, customer_id, order_id, now).await?;
            let custody = samples
                .iter()
                .map(|sample| CustodyFacts {
                    sequence: 0,
                    occurred_at: now,
                    action: "testing_started".into(),
                    accession_number: sample.accession_number.clone(),
                    actor: operator.to_owned(),
                    location: "Laboratory".into(),
                    details: format!("tests: {}", sample.test_names.join(", ")),
                })
                .collect();
            sample_repo::append_custody(&mut tx, customer_id, order_id, custody).await?;
            transition(
                &mut tx,
                (customer_id, order_id),
                &number,
                status,
                OrderStatus::InLab,
                REASON_TESTING_STARTED,
            )
            .await?;
            OUTBOX
                .enqueue(
                    &mut tx,
                    events::testing_started(customer_id, order_id, &number, now),
                )
                .await?;
            self.addons_testing_started(&mut tx, customer_id, order_id, now)
                .await?;
        }
        let samples = sample_repo::list_samples(&mut tx, customer_id, order_id).await?;
        let order = read_order(&mut tx, customer_id, order_id).await?;
        if !unchanged {
            repo::view::store(&mut tx, &order).await?;
        }
        tx.commit().await?;
        Ok(LabStep {
            order,
            samples,
            unchanged,
        })
    }

    /// Reads any order lab-wide (staff).
    pub async fn get_lab_order(&self, reference: &str) -> Result<Order, ApiError> {
        let reference = OrderReference::parse(reference).ok_or_else(not_found)?;
        let mut conn = self.pool.acquire().await?;
        let (customer_id, order_id) = sample_repo::find_order_for_staff(&mut conn, &reference)
            .await?
            .ok_or_else(not_found)?;
        read_order(&mut conn, customer_id, order_id).await
    }

    /// Reads the samples of one of the customer's orders.
    pub async fn list_samples(&self, customer_id: Uuid, reference: &str) -> Result<SampleView, ApiError> {
        let order = self.get_order(customer_id, reference).await?;
        let mut conn = self.pool.acquire().await?;
        let samples = sample_repo::list_samples(&mut conn, customer_id, order.id).await?;
        let coas = sample_repo::coas_of_order(&mut conn, customer_id, order.id).await?;
        Ok(SampleView { order, samples, coas })
    }

    /// Reads the chain of custody of one of the customer's orders.
    pub async fn get_custody(&self, customer_id: Uuid, reference: &str) -> Result<CustodyView, ApiError> {
        let order = self.get_order(customer_id, reference).await?;
        let mut conn = self.pool.acquire().await?;
        let entries = sample_repo::list_custody(&mut conn, customer_id, order.id).await?;
        let samples = sample_repo::list_samples(&mut conn, customer_id, order.id).await?;
        Ok(CustodyView {
            order,
            chain_intact: sample::chain_intact(&entries),
            entries,
            retain_until: samples.iter().map(|sample| sample.retain_until).max(),
        })
    }

    /// Records the disposal of a sample's retained portion as `operator`, once its retention
    /// period has ended (before that: `conflict` with `details.retainUntil`).
    pub async fn dispose_sample(
        &self,
        operator: &str,
        accession_number: &str,
        method: &str,
    ) -> Result<Disposal, ApiError> {
        let method = method.trim();
        if method.is_empty() || method.chars().count() > 200 {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "method",
                "method must be 1 to 200 characters",
            ));
        }
        let accession_number = accession_number.trim();
        let not_found = || ApiError::new(ErrorCode::NotFound, "sample not found");
        if !accession_number.starts_with("ACC-") {
            return Err(not_found());
        }
        let mut tx = self.pool.begin().await?;
        let (customer_id, order_id, _, _) =
            lock_for_staff(&mut tx, accession_number)
                .await
                .map_err(|error| match error.code {
                    ErrorCode::NotFound => not_found(),
                    _ => error,
                })?;
        let find = |samples: Vec<Sample>| {
            samples
                .into_iter()
                .find(|sample| sample.accession_number == accession_number)
                .ok_or_else(not_found)
        };
        let sample = find(sample_repo::list_samples(&mut tx, customer_id, order_id).await?)?;
        if sample.disposed_at.is_some() {
            let order = read_order(&mut tx, customer_id, order_id).await?;
            tx.commit().await?;
            return Ok(Disposal {
                order,
                sample,
                unchanged: true,
            });
        }
        let now = platform::time::now();
        if now < sample.retain_until {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "sample {accession_number} is retained until {}; it cannot be disposed of before",
                    platform::time::rfc3339(sample.retain_until)
                ),
            )
            .with_details(serde_json::json!({
                "retainUntil": platform::time::rfc3339(sample.retain_until),
            })));
        }
        sample_repo::mark_disposed(&mut tx, customer_id, accession_number, now, operator).await?;
        let entry = CustodyFacts {
            sequence: 0,
            occurred_at: now,
            action: "disposed".into(),
            accession_number: accession_number.to_owned(),
            actor: operator.to_owned(),
            location: sample.storage_location.clone(),
            details: format!("retained portion disposed of after its retention period ({method})"),
        };
        sample_repo::append_custody(&mut tx, customer_id, order_id, vec![entry]).await?;
        let sample = find(sample_repo::list_samples(&mut tx, customer_id, order_id).await?)?;
        let order = read_order(&mut tx, customer_id, order_id).await?;
        tx.commit().await?;
        Ok(Disposal {
            order,
            sample,
            unchanged: false,
        })
    }

    /// Applies results-svc's `coa.published` once per event: the sample gains its published COA
    /// (superseding the one it amends) with a custody entry, and the order moves to `reporting`,
    /// then `completed` when every sample has a COA in force.
    pub async fn apply_coa_published(
        &self,
        event_id: &str,
        customer_id: Uuid,
        coa: PublishedCoa<'_>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_ORDERS, event_id).await? {
            return tx.commit().await;
        }
        let Some(order_id) = sample_repo::record_published_coa(
            &mut tx,
            customer_id,
            coa.accession_number,
            (coa.coa_id, coa.amends),
            coa.published_at,
        )
        .await?
        else {
            tracing::warn!(
                accession = coa.accession_number,
                "coa.published for an unknown sample, ignored"
            );
            return tx.commit().await;
        };
        let Some((mut status, number)) = repo::lock_order(&mut tx, customer_id, order_id).await? else {
            return tx.commit().await;
        };
        let details = match coa.amends {
            Some(amends) => format!(
                "COA {} version {} published; amends and supersedes COA {amends}",
                coa.coa_id, coa.version
            ),
            None => format!("COA {} version {} published", coa.coa_id, coa.version),
        };
        let entry = CustodyFacts {
            sequence: 0,
            occurred_at: coa.published_at,
            action: "coa_published".into(),
            accession_number: coa.accession_number.to_owned(),
            actor: RESULTS_ACTOR.into(),
            location: QA_LOCATION.into(),
            details,
        };
        sample_repo::append_custody(&mut tx, customer_id, order_id, vec![entry]).await?;
        let order = (customer_id, order_id);
        self.addons_reported(
            &mut tx,
            order,
            coa.accession_number,
            coa.test_ids,
            coa.published_at,
        )
        .await?;
        if status == OrderStatus::InLab
            && transition(
                &mut tx,
                order,
                &number,
                status,
                OrderStatus::Reporting,
                REASON_COA_PUBLISHED,
            )
            .await?
        {
            status = OrderStatus::Reporting;
        }
        if status == OrderStatus::Reporting
            && sample_repo::samples_without_coa_in_force(&mut tx, customer_id, order_id).await? == 0
        {
            transition(
                &mut tx,
                order,
                &number,
                status,
                OrderStatus::Completed,
                REASON_COA_PUBLISHED,
            )
            .await?;
        }
        repo::view::refresh(&mut tx, customer_id, order_id).await?;
        tx.commit().await
    }

    /// Applies results-svc's `coa.retracted` once per event: a custody entry, and a `completed`
    /// order with a sample left without a COA in force goes back to `reporting`.
    pub async fn apply_coa_retracted(
        &self,
        event_id: &str,
        customer_id: Uuid,
        coa: RetractedCoa<'_>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !first_delivery(&mut tx, SCHEMA, GROUP_ORDERS, event_id).await? {
            return tx.commit().await;
        }
        let Some(order_id) = sample_repo::record_retracted_coa(
            &mut tx,
            customer_id,
            coa.accession_number,
            coa.coa_id,
            coa.retracted_at,
        )
        .await?
        else {
            tracing::warn!(
                accession = coa.accession_number,
                "coa.retracted for an unknown sample, ignored"
            );
            return tx.commit().await;
        };
        let Some((status, number)) = repo::lock_order(&mut tx, customer_id, order_id).await? else {
            return tx.commit().await;
        };
        let entry = CustodyFacts {
            sequence: 0,
            occurred_at: coa.retracted_at,
            action: "coa_retracted".into(),
            accession_number: coa.accession_number.to_owned(),
            actor: RESULTS_ACTOR.into(),
            location: QA_LOCATION.into(),
            details: format!("COA {} retracted: {}", coa.coa_id, coa.reason),
        };
        sample_repo::append_custody(&mut tx, customer_id, order_id, vec![entry]).await?;
        if status == OrderStatus::Completed
            && sample_repo::samples_without_coa_in_force(&mut tx, customer_id, order_id).await? > 0
        {
            transition(
                &mut tx,
                (customer_id, order_id),
                &number,
                status,
                OrderStatus::Reporting,
                REASON_COA_RETRACTED,
            )
            .await?;
            repo::view::refresh(&mut tx, customer_id, order_id).await?;
        }
        tx.commit().await
    }
}
