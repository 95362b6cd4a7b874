//! gRPC adapter of `lab.results.v1.NotificationService`: who may call each rpc ([`ACCESS`],
//! enforced by the platform's access layer), then per rpc: principal, idempotency key, the use
//! case of [`crate::notify`], domain back to proto. No business rule lives here.

use crate::notify::Notifications;
use crate::notify::consent::{CoaEmail, Consent, ConsentInput};
use platform::access::{self, AccessTable};
use platform::grpc::principal;
use platform::idempotency::IdempotencyKey;
use platform::pagination::PageRequest;
use platform::time::{from_timestamp, to_timestamp, to_timestamp_opt};
use proto::results::notification_service_server::NotificationService as NotificationApi;
use proto::results::{
    self as pb, CheckUnsubscribeRequest, CheckUnsubscribeResponse, ListConsentsRequest, ListConsentsResponse,
    RecordConsentRequest, RecordConsentResponse, SendCoaEmailRequest, SendCoaEmailResponse,
    UnsubscribeRequest, UnsubscribeResponse, WithdrawConsentRequest, WithdrawConsentResponse,
};
use proto::scopes::{ORDERS_READ, ORDERS_WRITE, RESULTS_READ};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Who may call each rpc: API keys with orders:read list consents, orders:write record and
/// withdraw them, results:read and orders:write email a COA; anyone holding an unsubscribe link
/// checks and uses it (its HMAC is the authorization).
pub const ACCESS: AccessTable = &[
    ("RecordConsent", access::customer(&[ORDERS_WRITE])),
    ("ListConsents", access::customer(&[ORDERS_READ])),
    ("WithdrawConsent", access::customer(&[ORDERS_WRITE])),
    ("SendCoaEmail", access::customer(&[RESULTS_READ, ORDERS_WRITE])),
    ("CheckUnsubscribe", access::PUBLIC),
    ("Unsubscribe", access::PUBLIC),
];

/// The tonic service over the notification use cases.
#[derive(Clone)]
pub struct NotificationGrpc {
    notifications: Arc<Notifications>,
}

impl NotificationGrpc {
    pub fn new(notifications: Arc<Notifications>) -> Self {
        Self { notifications }
    }
}

#[tonic::async_trait]
impl NotificationApi for NotificationGrpc {
    async fn record_consent(
        &self,
        request: Request<RecordConsentRequest>,
    ) -> Result<Response<RecordConsentResponse>, Status> {
        let principal = principal(&request)?;
        let key = IdempotencyKey::optional_from_grpc(&request)?;
        let message = request.into_inner();
        let input = ConsentInput {
            recipient_email: message.recipient_email,
            consented_by: message.consented_by,
            consented_at: message.consented_at.as_ref().and_then(from_timestamp),
            text_version: message.text_version,
            mechanism: message.mechanism,
            evidence_reference: message.evidence_reference,
        };
        self.notifications
            .record_consent(&principal, key, input)
            .await
            .into_response(|consent| RecordConsentResponse {
                consent: Some(consent_proto(&consent)),
            })
    }

    async fn list_consents(
        &self,
        request: Request<ListConsentsRequest>,
    ) -> Result<Response<ListConsentsResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let message = request.into_inner();
        let page = PageRequest::new(message.limit, message.cursor)?;
        let page = self
            .notifications
            .list_consents(customer_id, message.recipient_email, message.status, &page)
            .await?;
        Ok(Response::new(ListConsentsResponse {
            consents: page.items.iter().map(consent_proto).collect(),
            next_cursor: page.next_cursor,
        }))
    }

    async fn withdraw_consent(
        &self,
        request: Request<WithdrawConsentRequest>,
    ) -> Result<Response<WithdrawConsentResponse>, Status> {
        let customer_id = principal(&request)?.customer()?;
        let (consent, unchanged) = self
            .notifications
            .withdraw_consent(customer_id, &request.into_inner().consent_id)
            .await?;
        Ok(Response::new(WithdrawConsentResponse {
            consent: Some(consent_proto(&consent)),
            unchanged,
        }))
    }

    async fn send_coa_email(
        &self,
        request: Request<SendCoaEmailRequest>,
    ) -> Result<Response<SendCoaEmailResponse>, Status> {
        let principal = principal(&request)?;
        let key = IdempotencyKey::from_grpc(&request)?;
        let message = request.into_inner();
        self.notifications
            .send_coa_email(
                &principal,
                key,
                message.reference,
                message.recipient_email,
                message.message,
            )
            .await
            .into_response(|email| SendCoaEmailResponse {
                email: Some(email_proto(&email)),
            })
    }

    async fn check_unsubscribe(
        &self,
        request: Request<CheckUnsubscribeRequest>,
    ) -> Result<Response<CheckUnsubscribeResponse>, Status> {
        let withdrawn = self
            .notifications
            .check_unsubscribe(&request.into_inner().token)
            .await?;
        Ok(Response::new(CheckUnsubscribeResponse { withdrawn }))
    }

    async fn unsubscribe(
        &self,
        request: Request<UnsubscribeRequest>,
    ) -> Result<Response<UnsubscribeResponse>, Status> {
        let outcome = self
            .notifications
            .unsubscribe(&request.into_inner().token)
            .await?;
        Ok(Response::new(UnsubscribeResponse {
            withdrawn: outcome.withdrawn,
            unchanged: outcome.unchanged,
        }))
    }
}

fn consent_proto(consent: &Consent) -> pb::Consent {
    pb::Consent {
        id: consent.id.to_string(),
        recipient_email: consent.recipient_email.clone(),
        consented_by: consent.consented_by.clone(),
        consented_at: Some(to_timestamp(consent.consented_at)),
        text_version: consent.text_version.clone(),
        mechanism: consent.mechanism.clone(),
        evidence_reference: consent.evidence_reference.clone(),
        status: consent.status().to_owned(),
        withdrawn_at: to_timestamp_opt(consent.withdrawn_at),
        withdrawal_mechanism: consent.withdrawal_mechanism.clone(),
        recorded_at: Some(to_timestamp(consent.recorded_at)),
    }
}

fn email_proto(email: &CoaEmail) -> pb::CoaEmail {
    pb::CoaEmail {
        id: email.id.to_string(),
        coa_id: email.coa_id.to_string(),
        accession_number: email.accession_number.clone(),
        recipient_email: email.recipient_email.clone(),
        consent_id: email.consent_id.to_string(),
        status: email.status.clone(),
        message_id: email.message_id.clone(),
        sent_at: to_timestamp_opt(email.sent_at),
        verify_url: email.verify_url.clone(),
        created_at: Some(to_timestamp(email.created_at)),
    }
}
