//! `card_declined` played on a sandbox customer's own card order (docs/sandbox.md): the
//! sandbox processor's decline of the generic declining test card is applied to the order's
//! open checkout session under its row lock, exactly as the pay page applies a declined
//! attempt ([`super::checkout`]): the page shows the decline, the attempt is counted, the
//! session stays open for another card and the invoice stays unpaid. A decline is no event of
//! the catalogue, so none is emitted. No processor is called, whatever this deployment's is.

use super::PaymentsService;
use crate::domain::PaymentMethod;
use crate::domain::checkout::{CardBehaviour, PayOutcome};
use crate::processor::{CardProcessor, Charge};
use crate::repo;
use platform::error::{ApiError, ErrorCode};
use proto::common::Simulation;
use uuid::Uuid;

fn not_applicable(status: &str, needs: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ScenarioNotApplicable,
        format!(
            "the scenario card_declined does not fit the order now: its payment is {status}; it needs {needs}"
        ),
    )
    .with_details(serde_json::json!({ "scenario": "card_declined", "status": status, "needs": needs }))
}

impl PaymentsService {
    /// Declines a card on the open checkout session of `customer_id`'s card order `order_id`.
    pub async fn simulate_card_declined(
        &self,
        customer_id: Uuid,
        order_id: Uuid,
    ) -> Result<Simulation, ApiError> {
        let needs =
            "an unpaid card_checkout order with an open checkout session (POST /payments/prepare mints one)";
        let mut tx = self.pool.begin().await?;
        let invoice = repo::invoices::by_order(&mut tx, customer_id, order_id)
            .await?
            .ok_or_else(|| not_applicable("not invoiced", needs))?;
        if invoice.payment_method != PaymentMethod::CardCheckout {
            return Err(not_applicable(invoice.payment_method.as_str(), needs));
        }
        let latest = repo::checkout::latest_session(&mut tx, customer_id, invoice.id)
            .await?
            .ok_or_else(|| not_applicable("without a checkout session", needs))?;
        let session = repo::checkout::lock_session(&mut tx, &latest.id)
            .await?
            .ok_or_else(|| ApiError::internal("a checkout session vanished"))?;
        if !session.is_payable(platform::time::now()) {
            return Err(not_applicable(session.status.as_str(), needs));
        }
        let outcome =
            match crate::processor::sandbox::SandboxProcessor.charge(CardBehaviour::GenericDecline, false)? {
                Charge::Declined { code, message } => {
                    repo::checkout::record_decline(&mut tx, &session.id, message).await?;
                    PayOutcome::Declined {
                        code,
                        message: message.to_owned(),
                    }
                }
                _ => return Err(ApiError::internal("the declining test card did not decline")),
            };
        tx.commit().await?;
        platform::metrics::record_settlements("card", "declined", 1);
        let PayOutcome::Declined { code, .. } = outcome else {
            return Err(ApiError::internal("a decline that is not one"));
        };
        Ok(Simulation {
            scenario: "card_declined".into(),
            order_id: order_id.to_string(),
            status: "declined".into(),
            subject: "payment".into(),
            events: Vec::new(),
            unchanged: false,
            ids: [
                ("checkoutSessionId".to_owned(), session.id.clone()),
                ("declineCode".to_owned(), code.to_owned()),
            ]
            .into(),
        })
    }
}
