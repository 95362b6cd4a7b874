//! Translation of the customer-notification use cases to `lab.results.v1.NotificationService`
//! (results-svc): consents recorded (optional `Idempotency-Key`), listed and withdrawn, the
//! consent-gated COA email (required `Idempotency-Key`), and the public one-click unsubscribe
//! link's check and withdrawal (no key: the link's token is the authorization).

use super::{Replayable, is_replay, missing, service_error};
use crate::caller::Caller;
use crate::dto::notifications::{
    CoaEmail, CoaEmailEnvelope, Consent, ConsentEnvelope, ConsentList, ConsentsQuery, RecordConsentRequest,
    SendCoaEmailRequest,
};
use crate::peers::Peers;
use platform::error::ApiError;
use platform::grpc::{outgoing, outgoing_idempotent};
use platform::mesh::RESULTS_SVC;
use proto::results as pb;

/// `POST /notifications/consents`: records a recipient's consent.
pub async fn record_consent(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: Option<&str>,
    body: RecordConsentRequest,
) -> Result<Replayable<ConsentEnvelope>, ApiError> {
    let request = pb::RecordConsentRequest {
        recipient_email: body.recipient_email,
        consented_by: body.consented_by,
        consented_at: Some(platform::time::to_timestamp(body.consented_at)),
        text_version: body.text_version,
        mechanism: body.mechanism,
        evidence_reference: body.evidence_reference,
    };
    let token = caller.token(RESULTS_SVC);
    let request = match idempotency_key {
        Some(key) => outgoing_idempotent(request, &token, key),
        None => outgoing(request, &token),
    };
    let response = peers
        .notifications()
        .record_consent(request)
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let consent = response.into_inner().consent.ok_or_else(|| missing("consent"))?;
    Ok(Replayable {
        body: Consent::try_from(consent)?.into(),
        replayed,
    })
}

/// `GET /notifications/consents`: one page of the customer's consents, newest recorded first.
pub async fn list_consents(
    peers: &Peers,
    caller: &Caller,
    query: ConsentsQuery,
) -> Result<ConsentList, ApiError> {
    let request = pb::ListConsentsRequest {
        recipient_email: query.recipient_email,
        status: query.status,
        limit: query.limit,
        cursor: query.cursor,
    };
    let page = peers
        .notifications()
        .list_consents(outgoing(request, &caller.token(RESULTS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner();
    let data = page
        .consents
        .into_iter()
        .map(Consent::try_from)
        .collect::<Result<_, _>>()?;
    Ok(ConsentList::new(data, page.next_cursor))
}

/// `POST /notifications/consents/{consentId}/withdraw`: withdraws one of the customer's consents.
pub async fn withdraw_consent(
    peers: &Peers,
    caller: &Caller,
    consent_id: String,
) -> Result<ConsentEnvelope, ApiError> {
    let request = pb::WithdrawConsentRequest { consent_id };
    let consent = peers
        .notifications()
        .withdraw_consent(outgoing(request, &caller.token(RESULTS_SVC)))
        .await
        .map_err(service_error)?
        .into_inner()
        .consent
        .ok_or_else(|| missing("consent"))?;
    Ok(Consent::try_from(consent)?.into())
}

/// `POST /notifications/customer-coa`: emails a published COA to a consenting recipient.
pub async fn send_coa_email(
    peers: &Peers,
    caller: &Caller,
    idempotency_key: String,
    body: SendCoaEmailRequest,
) -> Result<Replayable<CoaEmailEnvelope>, ApiError> {
    let request = pb::SendCoaEmailRequest {
        reference: body.reference,
        recipient_email: body.recipient_email,
        message: body.message,
    };
    let response = peers
        .notifications()
        .send_coa_email(outgoing_idempotent(
            request,
            &caller.token(RESULTS_SVC),
            &idempotency_key,
        ))
        .await
        .map_err(service_error)?;
    let replayed = is_replay(&response);
    let email = response.into_inner().email.ok_or_else(|| missing("email"))?;
    Ok(Replayable {
        body: CoaEmail::try_from(email)?.into(),
        replayed,
    })
}

/// The unsubscribe page's check: whether the link's consent is already withdrawn (nothing changes).
pub async fn check_unsubscribe(peers: &Peers, token: String) -> Result<bool, ApiError> {
    Ok(peers
        .notifications()
        .check_unsubscribe(public(pb::CheckUnsubscribeRequest { token }))
        .await
        .map_err(service_error)?
        .into_inner()
        .withdrawn)
}

/// The one-click unsubscribe: withdraws the link's consent; true when it was withdrawn before.
pub async fn unsubscribe(peers: &Peers, token: String) -> Result<bool, ApiError> {
    Ok(peers
        .notifications()
        .unsubscribe(public(pb::UnsubscribeRequest { token }))
        .await
        .map_err(service_error)?
        .into_inner()
        .unchanged)
}

/// A request without a principal (the link's token authorizes), carrying the trace context.
fn public<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    platform::grpc::inject_trace_context(request.metadata_mut());
    request
}
