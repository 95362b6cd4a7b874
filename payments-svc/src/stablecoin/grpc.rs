//! The stablecoin rail's rpcs, called from `crate::grpc::PaymentsGrpc`: proto to domain, the use
//! case, domain back to proto. Without a configured rail every rpc answers
//! `payment_method_unavailable`.

use super::StablecoinRail;
use super::request::PaymentRequest;
use super::service::parse_tx_hash;
use crate::chain::ChainAddress;
use crate::chain::amount::NO_ROUNDING_NOTICE;
use crate::domain::{InvoiceReference, PaymentMethod};
use platform::error::{ApiError, ErrorCode};
use platform::grpc::principal;
use platform::idempotency::{IdempotencyKey, IdempotencyStore, Json};
use proto::payments as pb;
use tonic::{Request, Response, Status};

/// Idempotency operation name of a submission.
const OP_SUBMIT: &str = "payments.stablecoin.submit";

pub(crate) fn rail(rail: Option<&StablecoinRail>) -> Result<&StablecoinRail, ApiError> {
    rail.ok_or_else(|| {
        ApiError::new(
            ErrorCode::PaymentMethodUnavailable,
            "the stablecoin rail is not offered by this deployment",
        )
        .with_details(serde_json::json!({
            "availableMethods": [PaymentMethod::BankInvoice.as_str(), PaymentMethod::CardCheckout.as_str()]
        }))
    })
}

fn reference(value: &str) -> Result<InvoiceReference, ApiError> {
    InvoiceReference::parse_required("reference", value)
}

fn respond(request: PaymentRequest) -> pb::StablecoinPaymentResponse {
    pb::StablecoinPaymentResponse {
        payment: Some(request.into()),
    }
}

/// RequestStablecoinPayment.
pub async fn request_payment(
    stablecoin: Option<&StablecoinRail>,
    request: Request<pb::RequestStablecoinPaymentRequest>,
) -> Result<Response<pb::StablecoinPaymentResponse>, Status> {
    let customer = principal(&request)?.customer()?;
    let message = request.into_inner();
    let payer = message
        .expected_payer_address
        .as_deref()
        .map(|value| ChainAddress::parse_checksummed(value, "expectedPayerAddress"))
        .transpose()?;
    let payment = rail(stablecoin)?
        .request_payment(customer, &reference(&message.reference)?, payer)
        .await?;
    Ok(Response::new(respond(payment)))
}

/// GetStablecoinPayment.
pub async fn get_payment(
    stablecoin: Option<&StablecoinRail>,
    request: Request<pb::GetStablecoinPaymentRequest>,
) -> Result<Response<pb::StablecoinPaymentResponse>, Status> {
    let customer = principal(&request)?.customer()?;
    let payment = rail(stablecoin)?
        .get_request(customer, &reference(&request.get_ref().reference)?)
        .await?;
    Ok(Response::new(respond(payment)))
}

/// CheckStablecoinRail: the rail is offered and the payer address is acceptable (writes nothing).
pub fn check_rail(
    stablecoin: Option<&StablecoinRail>,
    request: Request<pb::CheckStablecoinRailRequest>,
) -> Result<Response<pb::CheckStablecoinRailResponse>, Status> {
    let rail = rail(stablecoin)?;
    let payer = request.get_ref().expected_payer_address.trim();
    if payer.is_empty() {
        return Err(ApiError::field(
            ErrorCode::InvalidRequest,
            "expectedPayerAddress",
            "expectedPayerAddress (the self-custodied wallet that will send the transfer) is required for the stablecoin rail",
        )
        .into());
    }
    let payer = ChainAddress::parse_checksummed(payer, "expectedPayerAddress")?;
    rail.check_payer(&payer)?;
    let settings = rail.settings();
    Ok(Response::new(pb::CheckStablecoinRailResponse {
        chain_id: settings.chain_id,
        token_address: settings.token.checksummed(),
        target_address: settings.treasury.checksummed(),
    }))
}

/// The payment request of a prepared stablecoin invoice: renewed when it expired unpaid, else
/// as it stands (PreparePayment).
pub async fn prepare(
    stablecoin: Option<&StablecoinRail>,
    customer: uuid::Uuid,
    invoice_id: uuid::Uuid,
) -> Result<pb::StablecoinPayment, ApiError> {
    let payment = rail(stablecoin)?
        .request_payment(customer, &InvoiceReference::Id(invoice_id), None)
        .await?;
    Ok(payment.into())
}

/// The stablecoin request of a checkout page's invoice, when the rail is offered and one exists.
pub async fn of_checkout(
    stablecoin: Option<&StablecoinRail>,
    customer: uuid::Uuid,
    invoice_id: uuid::Uuid,
) -> Option<pb::StablecoinPayment> {
    let rail = stablecoin?;
    rail.get_request(customer, &InvoiceReference::Id(invoice_id))
        .await
        .ok()
        .map(Into::into)
}

/// CheckoutStablecoin's effect on the session's invoice: issue the request for `payer`, or
/// verify `hash`.
pub async fn checkout_action(
    stablecoin: Option<&StablecoinRail>,
    customer: uuid::Uuid,
    invoice_id: uuid::Uuid,
    payer: Option<&str>,
    hash: Option<&str>,
) -> Result<(), ApiError> {
    let rail = rail(stablecoin)?;
    let invoice = InvoiceReference::Id(invoice_id);
    if let Some(payer) = payer {
        let payer = ChainAddress::parse_checksummed(payer, "expectedPayerAddress")?;
        rail.request_payment_on(customer, &invoice, Some(payer), true)
            .await?;
    }
    if let Some(hash) = hash {
        rail.submit(customer, &invoice, parse_tx_hash(hash)?, None)
            .await?;
    }
    Ok(())
}

/// SubmitStablecoinTransaction, under the request's Idempotency-Key.
pub async fn submit(
    stablecoin: Option<&StablecoinRail>,
    idempotency: &IdempotencyStore,
    request: Request<pb::SubmitStablecoinTransactionRequest>,
) -> Result<Response<pb::StablecoinPaymentResponse>, Status> {
    let customer = principal(&request)?.customer()?;
    let key = IdempotencyKey::from_grpc(&request)?;
    let message = request.into_inner();
    let rail = rail(stablecoin)?;
    let (order, hash) = (
        reference(&message.reference)?,
        parse_tx_hash(&message.transaction_hash)?,
    );
    idempotency
        .run(
            &rail.pool,
            key.call(customer, OP_SUBMIT),
            &Json,
            async |attempt| rail.submit(customer, &order, hash, Some(attempt)).await,
        )
        .await
        .into_response(respond)
}

impl From<PaymentRequest> for pb::StablecoinPayment {
    fn from(request: PaymentRequest) -> Self {
        let timestamp = platform::time::to_timestamp;
        Self {
            id: request.id.to_string(),
            invoice_id: request.invoice_id.to_string(),
            order_id: request.order_id.to_string(),
            order_number: request.order_number,
            chain_id: request.chain_id,
            token_address: request.token.checksummed(),
            target_address: request.target.checksummed(),
            payer_address: request.payer.checksummed(),
            amount_cents: request.amount.cents.0,
            amount_atomic: request.amount.atomic,
            amount_decimal: request.amount.decimal(),
            reference_atomic: request.amount.reference,
            notice: NO_ROUNDING_NOTICE.to_owned(),
            status: request.status.as_str().to_owned(),
            expires_at: Some(timestamp(request.expires_at)),
            transfer: request.transfer.map(|transfer| pb::StablecoinTransfer {
                transaction_hash: transfer.tx_hash,
                log_index: transfer.log_index,
                block_number: transfer.block_number,
                block_hash: transfer.block_hash,
            }),
            proof_json: request.proof.map(|proof| proof.to_string()),
            confirmed_at: request.confirmed_at.map(timestamp),
            created_at: Some(timestamp(request.created_at)),
        }
    }
}
