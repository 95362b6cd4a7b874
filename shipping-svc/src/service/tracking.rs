//! Recording carrier scans. One transaction per scan: lock the shipment by tracking number,
//! record the scan unless the shipment has one with the same carrier id (a duplicate changes
//! nothing), and, when the scan is newer than the latest applied one and the shipment is not
//! terminal, set the shipment's status and enqueue `shipment.updated`. An older scan
//! (out of order) joins the history only, so neither the shipment nor its order moves back.
//! A carrier webhook's scans share one transaction with the claim of its event id
//! ([`super::webhooks`]).
//!
//! A sandbox customer plays a scan script on its own order's label
//! ([`ShippingService::simulate_delivery`], docs/sandbox.md): `delivered` or `lost_in_transit`,
//! recorded scan by scan through the same [`apply_scan`] as the carrier's scans.

use super::{ShippingService, shipment_not_found};
use crate::carrier::sandbox;
use crate::domain::{CarrierEvent, Scan, Shipment, TrackedShipment};
use crate::{OUTBOX, events, repo};
use chrono::Duration;
use platform::error::{ApiError, ErrorCode};
use sqlx::PgConnection;
use uuid::Uuid;

impl ShippingService {
    /// Records one scan; returns the shipment as it stands and whether the scan was new.
    pub async fn record_scan(&self, scan: &Scan) -> Result<(TrackedShipment, bool), ApiError> {
        let mut tx = self.pool.begin().await?;
        let (shipment, recorded) = apply_scan(&mut tx, scan).await?.ok_or_else(shipment_not_found)?;
        tx.commit().await?;
        let tracked = self.tracked(shipment.customer_id, shipment.id).await?;
        Ok((tracked, recorded))
    }

    /// Plays a sandbox script on a shipment: its scans one second apart from now, each with a
    /// stable carrier id, so playing the same script again records nothing new.
    pub async fn simulate(
        &self,
        tracking_number: &str,
        script: &str,
    ) -> Result<(TrackedShipment, i32), ApiError> {
        if !self.carrier.is_sandbox() {
            // A deployment with a real carrier still serves sandbox customers' labels from the
            // sandbox carrier: scripts play on those, never on a real carrier's label.
            let mut conn = self.pool.acquire().await?;
            let shipment = repo::shipments::lock_by_tracking(&mut conn, tracking_number.trim()).await?;
            if !shipment.is_some_and(|shipment| shipment.sandbox) {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    "scan scripts play only on labels of the sandbox carrier",
                ));
            }
        }
        self.play(tracking_number, script).await
    }

    /// Plays `scenario` (`delivered` or `lost_in_transit`) on the label of a sandbox customer's
    /// order: `scenario_not_applicable` while the order has no label, once the label was voided,
    /// or when the parcel already ended otherwise (delivered, lost or returned); playing the
    /// same scenario again records nothing (`unchanged`).
    pub async fn simulate_delivery(
        &self,
        customer_id: Uuid,
        order_id: Uuid,
        scenario: &str,
    ) -> Result<proto::common::Simulation, ApiError> {
        let (script, terminal) = match scenario {
            "delivered" => ("delivered", proto::common::ShipmentStatus::Delivered),
            "lost_in_transit" => ("lost", proto::common::ShipmentStatus::Lost),
            _ => {
                return Err(ApiError::field(
                    ErrorCode::InvalidRequest,
                    "scenario",
                    "shipping-svc plays the scenarios delivered and lost_in_transit",
                ));
            }
        };
        let not_applicable = |status: &str, needs: &str| {
            ApiError::new(
                ErrorCode::ScenarioNotApplicable,
                format!("the scenario {scenario} does not fit the order now: its shipment is {status}; {scenario} needs {needs}"),
            )
            .with_details(serde_json::json!({ "scenario": scenario, "status": status, "needs": needs }))
        };
        let mut conn = self.pool.acquire().await?;
        let shipment = repo::shipments::by_order(&mut conn, customer_id, order_id).await?;
        drop(conn);
        let Some(shipment) = shipment else {
            return Err(not_applicable(
                "not bought yet",
                "the order's prepaid label (on the stablecoin rail it is bought once the payment settles)",
            ));
        };
        if !self.carrier_for(shipment.sandbox).is_sandbox() {
            // An order placed before its customer's sandbox labels came from the sandbox carrier.
            return Err(not_applicable(
                "on_live_carrier",
                "a label of the sandbox carrier (scans are never faked on a real carrier's label)",
            ));
        }
        if shipment.voided.is_some() {
            return Err(not_applicable("label_voided", "a label that was not voided"));
        }
        if shipment.status.is_terminal() && shipment.status != terminal {
            return Err(not_applicable(
                shipment.status.as_str(),
                "a parcel still on its way",
            ));
        }
        let (tracked, recorded) = self.play(&shipment.tracking_number, script).await?;
        let events = vec!["shipment.updated".to_owned(); usize::try_from(recorded).unwrap_or(0)];
        Ok(proto::common::Simulation {
            scenario: scenario.to_owned(),
            order_id: order_id.to_string(),
            status: tracked.shipment.status.as_str().to_owned(),
            subject: "shipment".into(),
            unchanged: recorded == 0,
            events,
            ids: [("trackingNumber".to_owned(), shipment.tracking_number.clone())].into(),
        })
    }

    /// Records the scans of `script` on the shipment with `tracking_number`, one second apart
    /// from now, each with a stable carrier id.
    async fn play(&self, tracking_number: &str, script: &str) -> Result<(TrackedShipment, i32), ApiError> {
        let scans = sandbox::script(script).ok_or_else(|| {
            ApiError::field(ErrorCode::InvalidRequest, "script", "unknown script")
                .with_details(serde_json::json!({ "field": "script", "allowed": sandbox::SCRIPTS }))
        })?;
        let start = platform::time::now();
        let mut recorded = 0;
        let mut last = None;
        for (index, (status, code, description, location)) in scans.into_iter().enumerate() {
            let scan = Scan {
                tracking_number: tracking_number.to_owned(),
                status,
                status_code: code.to_owned(),
                description: description.to_owned(),
                location: location.to_owned(),
                occurred_at: start + Duration::seconds(index as i64),
                carrier_event_id: format!("sandbox:{script}:{index}"),
            };
            let (tracked, new) = self.record_scan(&scan).await?;
            recorded += i32::from(new);
            last = Some(tracked);
        }
        let tracked = last.ok_or_else(|| ApiError::internal("an empty scan script"))?;
        Ok((tracked, recorded))
    }
}

/// Records one scan in the caller's transaction (the module's rules); `None` when no bought
/// shipment has its tracking number, else the shipment as locked and whether the scan was new.
pub(crate) async fn apply_scan(
    conn: &mut PgConnection,
    scan: &Scan,
) -> Result<Option<(Shipment, bool)>, ApiError> {
    let Some(shipment) = repo::shipments::lock_by_tracking(&mut *conn, &scan.tracking_number).await? else {
        return Ok(None);
    };
    let event = CarrierEvent {
        id: Uuid::now_v7(),
        shipment_id: shipment.id,
        status: scan.status,
        status_code: scan.status_code.clone(),
        description: scan.description.clone(),
        occurred_at: scan.occurred_at,
        location: scan.location.clone(),
        carrier_event_id: if scan.carrier_event_id.is_empty() {
            Scan::derived_event_id(scan.status, scan.occurred_at)
        } else {
            scan.carrier_event_id.clone()
        },
    };
    let now = platform::time::now();
    let recorded = repo::shipments::insert_event(&mut *conn, shipment.customer_id, &event, now).await?;
    let newer = shipment
        .last_event_at
        .is_none_or(|latest| event.occurred_at > latest);
    if recorded && newer && !shipment.status.is_terminal() {
        repo::shipments::set_status(&mut *conn, shipment.id, event.status, event.occurred_at, now).await?;
        OUTBOX
            .enqueue(&mut *conn, events::scanned(&shipment, &event))
            .await?;
    } else if recorded {
        tracing::info!(
            shipment.id = %shipment.id,
            status = event.status.as_str(),
            "an out-of-order scan joins the history without moving the shipment"
        );
    }
    Ok(Some((shipment, recorded)))
}
