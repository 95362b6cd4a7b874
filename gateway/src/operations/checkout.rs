//! Translation of the payment use cases to `lab.payments.v1.PaymentsService`: payment
//! preparation for agents (`POST /payments/prepare`) and the hosted pay page's calls (the
//! gateway acts as itself there, as the service `gateway`: the page's caller holds the session
//! id of the hosted URL, not an API key).

use super::{Replayable, is_replay, missing, service_error};
use crate::caller::Caller;
use crate::dto::billing::{
    PreparePaymentRequest, PreparedPayment, PreparedPaymentEnvelope, SpendEnvelope, SpendEnvelopeEnvelope,
};
use crate::dto::stablecoin::{StablecoinPayment, StablecoinPaymentEnvelope, SubmitStablecoinRequest};
use crate::peers::Peers;
use platform::error::ApiError;
use platform::grpc::{outgoing, outgoing_idempotent};
use platform::mesh::PAYMENTS_SVC;
use platform::tokens::TokenIssuer;
use proto::payments as pb;

/// `POST /payments/prepare`: how to pay an order now (a fresh checkout link, the paid state, or
/// bank remittance), idempotent under the caller's key.
pub async fn prepare_payment(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: &str,
    body: PreparePaymentRequest,
) -> Result<Replayable<PreparedPaymentEnvelope>, ApiError> {
    let request = pb::PreparePaymentRequest {
        order_reference: body.order_reference,
    };
    let response = peers
        .payments()
        .prepare_payment(outgoing_idempotent(
            request,
            &caller.token(PAYMENTS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let prepared = response.into_inner();
    let invoice = prepared.invoice.ok_or_else(|| missing("invoice"))?;
    Ok(Replayable {
        body: PreparedPayment::from_proto(prepared.state, invoice, prepared.stablecoin)?.into(),
        replayed,
    })
}

/// `GET /payments/stablecoin/{reference}`: the order's stablecoin payment request (token, target,
/// exact amount, reference, expiry), its state and, once confirmed, its settlement proof.
pub async fn get_stablecoin_payment(
    peers: &Peers,
    caller: &Caller,
    reference: String,
) -> Result<StablecoinPaymentEnvelope, ApiError> {
    let request = pb::GetStablecoinPaymentRequest { reference };
    let response = peers
        .payments()
        .get_stablecoin_payment(outgoing(request, &caller.token(PAYMENTS_SVC)))
        .await
        .map_err(service_error)?;
    let payment = response.into_inner().payment.ok_or_else(|| missing("payment"))?;
    Ok(StablecoinPayment::try_from(payment)?.into())
}

/// `POST /payments/stablecoin/submit`: read-only verification of a payer-submitted transaction
/// hash, idempotent under the caller's key (503 answers are not stored: a retry verifies again).
pub async fn submit_stablecoin_transaction(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: &str,
    body: SubmitStablecoinRequest,
) -> Result<Replayable<StablecoinPaymentEnvelope>, ApiError> {
    let request = pb::SubmitStablecoinTransactionRequest {
        reference: body.reference,
        transaction_hash: body.transaction_hash,
    };
    let response = peers
        .payments()
        .submit_stablecoin_transaction(outgoing_idempotent(
            request,
            &caller.token(PAYMENTS_SVC),
            idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let payment = response.into_inner().payment.ok_or_else(|| missing("payment"))?;
    Ok(Replayable {
        body: StablecoinPayment::try_from(payment)?.into(),
        replayed,
    })
}

/// `GET /spend-envelope`: the calling key's envelope and remainders.
pub async fn spend_envelope(peers: &Peers, caller: &Caller) -> Result<SpendEnvelopeEnvelope, ApiError> {
    let request = pb::GetSpendEnvelopeRequest {
        customer_id: None,
        key_id: None,
    };
    let response = peers
        .payments()
        .get_spend_envelope(outgoing(request, &caller.token(PAYMENTS_SVC)))
        .await
        .map_err(service_error)?;
    let envelope = response
        .into_inner()
        .envelope
        .ok_or_else(|| missing("envelope"))?;
    Ok(SpendEnvelope::from(envelope).into())
}

/// The pay page of a checkout session.
pub async fn checkout_page(
    peers: &Peers,
    tokens: &TokenIssuer,
    session_id: String,
) -> Result<pb::CheckoutPage, ApiError> {
    let token = tokens.service_token(PAYMENTS_SVC, None);
    let response = peers
        .payments()
        .get_checkout(outgoing(pb::GetCheckoutRequest { session_id }, &token))
        .await
        .map_err(service_error)?;
    response.into_inner().page.ok_or_else(|| missing("checkout page"))
}

/// A payment attempt on the pay page.
pub async fn pay_checkout(
    peers: &Peers,
    tokens: &TokenIssuer,
    request: pb::PayCheckoutRequest,
) -> Result<pb::PayCheckoutResponse, ApiError> {
    let token = tokens.service_token(PAYMENTS_SVC, None);
    let response = peers
        .payments()
        .pay_checkout(outgoing(request, &token))
        .await
        .map_err(service_error)?;
    Ok(response.into_inner())
}

/// The authentication step of a pending payment on the pay page.
pub async fn confirm_checkout(
    peers: &Peers,
    tokens: &TokenIssuer,
    request: pb::ConfirmCheckoutRequest,
) -> Result<pb::PayCheckoutResponse, ApiError> {
    let token = tokens.service_token(PAYMENTS_SVC, None);
    let response = peers
        .payments()
        .confirm_checkout(outgoing(request, &token))
        .await
        .map_err(service_error)?;
    Ok(response.into_inner())
}

/// The pay page's "settled stablecoin" option: issue the request for the payer's address, or
/// verify a transaction hash; answers the page as it then stands.
pub async fn checkout_stablecoin(
    peers: &Peers,
    tokens: &TokenIssuer,
    request: pb::CheckoutStablecoinRequest,
) -> Result<pb::CheckoutPage, ApiError> {
    let token = tokens.service_token(PAYMENTS_SVC, None);
    let response = peers
        .payments()
        .checkout_stablecoin(outgoing(request, &token))
        .await
        .map_err(service_error)?;
    response.into_inner().page.ok_or_else(|| missing("checkout page"))
}

/// A processor webhook, passed through with its exact raw body and signature header.
pub async fn processor_webhook(
    peers: &Peers,
    tokens: &TokenIssuer,
    request: pb::HandleProcessorWebhookRequest,
) -> Result<String, ApiError> {
    let token = tokens.service_token(PAYMENTS_SVC, None);
    let response = peers
        .payments()
        .handle_processor_webhook(outgoing(request, &token))
        .await
        .map_err(service_error)?;
    Ok(response.into_inner().outcome)
}
