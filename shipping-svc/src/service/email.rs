//! Emailing the label when a bank invoice is paid, never twice:
//!
//! 1. the order's shipment (the label is bought at order time; none yet is a retryable error;
//!    a label voided because the order was cancelled is not emailed);
//! 2. in one transaction, claim the shipment's row in the message log (unique per shipment);
//!    a row already `sent` ends here;
//! 3. send through the mailer (SMTP or files) with a stable Message-ID;
//! 4. record the attempt: `sent`, or `failed` with the error (the consumer then retries, and the
//!    log counts the attempts: a message sent on a later attempt was retried).

use super::ShippingService;
use crate::mail::LabelEmail;
use crate::repo;
use crate::repo::emails::EmailRecord;
use platform::error::ApiError;
use uuid::Uuid;

impl ShippingService {
    /// Emails the order's label to the customer unless it was sent before.
    pub async fn email_label(&self, customer_id: Uuid, order_id: Uuid) -> Result<(), ApiError> {
        let shipment = {
            let mut conn = self.pool.acquire().await?;
            repo::shipments::by_order(&mut conn, customer_id, order_id).await?
        }
        .ok_or_else(|| ApiError::unavailable("the order's label", "not bought yet"))?;
        if shipment.voided.is_some() {
            tracing::info!(shipment.id = %shipment.id, "the order was cancelled; its voided label is not emailed");
            return Ok(());
        }
        let (name, email) = self.customer_contact(customer_id).await?;
        let now = platform::time::now();
        let subject = format!(
            "Prepaid shipping label for order {} ({})",
            shipment.order_number, shipment.tracking_number
        );
        let proposed = EmailRecord {
            id: Uuid::now_v7(),
            shipment_id: shipment.id,
            message_id: format!("<label-{}@shipping.lab>", shipment.id),
            to_address: email,
            subject,
            status: "sending".to_owned(),
            attempts: 0,
            last_error: None,
            sent_at: None,
        };
        let mut tx = self.pool.begin().await?;
        let record = repo::emails::claim(&mut tx, &proposed, customer_id, now).await?;
        tx.commit().await?;
        if record.status == "sent" {
            return Ok(());
        }
        let pdf = self
            .label_pdf(shipment.id)
            .await?
            .ok_or_else(|| ApiError::internal("a bought shipment has no label file"))?;
        let steps = shipment
            .packing_steps
            .iter()
            .map(|step| format!("{}. {}", step.step, step.instruction))
            .collect::<Vec<_>>()
            .join("\n");
        let text = format!(
            "Hello {name},\n\nyour payment for order {order} has arrived. Attached is the prepaid label \
             (tracking number {tracking}, {tracking_url}). Print it at 4x6 in and attach it to the parcel.\n\n\
             Ship to:\n{ship_to}\n\nPacking steps:\n{steps}\n",
            order = shipment.order_number,
            tracking = shipment.tracking_number,
            tracking_url = shipment.tracking_url,
            ship_to = shipment.ship_to.lines().join("\n"),
        );
        let message = LabelEmail {
            message_id: record.message_id.clone(),
            to: record.to_address.clone(),
            subject: record.subject.clone(),
            text,
            filename: format!("label-{}.pdf", shipment.tracking_number),
            pdf,
        };
        let outcome = self.mailer.send(&message.into()).await;
        let mut tx = self.pool.begin().await?;
        repo::emails::record_attempt(
            &mut tx,
            record.id,
            outcome.as_ref().map(|_| ()).map_err(String::as_str),
            platform::time::now(),
        )
        .await?;
        tx.commit().await?;
        match outcome {
            Ok(()) => {
                tracing::info!(shipment.id = %shipment.id, attempts = record.attempts + 1, "label emailed");
                Ok(())
            }
            Err(error) => {
                tracing::warn!(shipment.id = %shipment.id, %error, "the label email failed; it is retried");
                Err(ApiError::unavailable("the mail relay", error))
            }
        }
    }
}
