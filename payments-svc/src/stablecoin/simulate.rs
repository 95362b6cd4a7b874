//! `stablecoin_reorg` played on a sandbox customer's own order (docs/sandbox.md): the order's
//! payment request must be `confirming` (a transfer was submitted and observed); its transfer
//! then leaves it exactly as when the scanner finds the block gone from the canonical chain
//! ([`super::scanner::reorg`]): `payment.reorged`, and the request awaits a transfer again. No
//! chain provider is asked anything.

use super::StablecoinRail;
use super::request::RequestStatus;
use crate::repo as payments_repo;
use platform::error::{ApiError, ErrorCode};
use proto::common::Simulation;
use uuid::Uuid;

/// `scenario_not_applicable` for `stablecoin_reorg` on a request in `status`.
fn not_applicable(status: &str) -> ApiError {
    let needs = "a stablecoin payment request whose transfer was submitted and is confirming";
    ApiError::new(
        ErrorCode::ScenarioNotApplicable,
        format!("the scenario stablecoin_reorg does not fit the order now: its payment is {status}; it needs {needs}"),
    )
    .with_details(serde_json::json!({ "scenario": "stablecoin_reorg", "status": status, "needs": needs }))
}

impl StablecoinRail {
    /// Reorgs the observed transfer of the payment request of `customer_id`'s order `order_id`.
    pub async fn simulate_reorg(&self, customer_id: Uuid, order_id: Uuid) -> Result<Simulation, ApiError> {
        let mut tx = self.pool.begin().await?;
        let invoice = payments_repo::invoices::by_order(&mut tx, customer_id, order_id)
            .await?
            .ok_or_else(|| not_applicable("not requested (no invoice)"))?;
        let request = super::repo::by_invoice(&mut tx, customer_id, invoice.id, true)
            .await?
            .ok_or_else(|| not_applicable("not requested (another rail)"))?;
        let transfer = match (&request.status, &request.transfer) {
            (RequestStatus::Confirming, Some(transfer)) => transfer.clone(),
            (status, _) => return Err(not_applicable(status.as_str())),
        };
        super::scanner::reorg(&mut tx, &request, &transfer).await?;
        tx.commit().await?;
        tracing::info!(request = %request.id, tx = %transfer.tx_hash, "a sandbox reorg of an observed stablecoin transfer");
        Ok(Simulation {
            scenario: "stablecoin_reorg".into(),
            order_id: order_id.to_string(),
            status: RequestStatus::AwaitingTransfer.as_str().to_owned(),
            subject: "payment".into(),
            events: vec![super::events::PAYMENT_REORGED.to_owned()],
            unchanged: false,
            ids: [("transactionHash".to_owned(), transfer.tx_hash.clone())].into(),
        })
    }
}
