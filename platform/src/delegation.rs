//! A service acts for a customer only when it was asked to serve that customer.
//!
//! A service's own token names the service; the customer it claims to act for is believed only
//! with proof that travels beside the token, one of:
//!
//! * a **delegation**: a short-lived EdDSA JWT the gateway signs for one customer request (the
//!   customer, the API key, its scopes, the request id; audience [`DELEGATION_AUDIENCE`], 60 s),
//!   sent in [`DELEGATION_HEADER`] with every call the request causes and forwarded unchanged by
//!   every service that calls further on the request's behalf;
//! * a **signed event**: the stream entry whose handling caused the call, as its owner signed it
//!   (`crate::event_signing`), sent in [`EVENT_HEADER`]; it acts for the event's customer.
//!
//! Both are passed on without any handler's help: the access layer runs each call inside the
//! context it arrived with ([`acting_for`]), the consumer runs each event's handling inside that
//! event's context, and `crate::grpc::outgoing` attaches the current context to every call.
//! The access layer of the called service verifies the proof whenever a *service* principal
//! names a customer ([`CustomerAuthority::verify`]): a delegation must be the gateway's, unexpired
//! and for that customer; an event must verify as its stream owner's, be of this deployment's
//! streams, be for that customer and at most [`EVENT_CONTEXT_MAX_AGE`] old. Anything else is
//! refused before the handler runs, even with a valid service token: a compromised shipping-svc
//! cannot read a customer it was never asked to serve, nor a compromised orders-svc invoice one.
//! Calls without a customer (staff, a service's own jobs) need no proof.

use crate::error::{ApiError, ErrorCode};
use crate::event_signing::EventVerifier;
use crate::tokens::TokenVerifier;
use prost::Message;
use proto::events::{EventEnvelope, SignedEntry};
use std::sync::Arc;
use std::time::Duration;
use tonic::metadata::{MetadataMap, MetadataValue};
use uuid::Uuid;

/// gRPC metadata carrying a delegation (the JWT).
pub const DELEGATION_HEADER: &str = "x-lab-delegation";
/// Binary gRPC metadata carrying a signed event (`lab.events.v1.SignedEntry`).
pub const EVENT_HEADER: &str = "x-lab-event-bin";
pub use crate::tokens::{DELEGATION_AUDIENCE, DELEGATION_TTL};
/// Oldest event whose customer a service may act for (the streams keep events 7 days).
pub const EVENT_CONTEXT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Proof that the current work acts for a customer, passed on to every call it makes.
#[derive(Clone, Debug)]
pub enum CustomerContext {
    /// A gateway-signed delegation (the JWT).
    Delegation(Arc<str>),
    /// The signed stream entry whose handling this is (encoded `SignedEntry`).
    Event(Arc<[u8]>),
}

impl CustomerContext {
    /// The context of handling the entry of `stream` holding `envelope`, signed as `kid`/`signature`.
    pub fn event(stream: &str, envelope: &[u8], kid: &[u8], signature: &[u8]) -> Self {
        let entry = SignedEntry {
            stream: stream.to_owned(),
            envelope: envelope.to_vec(),
            kid: String::from_utf8_lossy(kid).into_owned(),
            signature: signature.to_vec(),
        };
        Self::Event(entry.encode_to_vec().into())
    }

    /// The context a request arrived with, from its metadata (a delegation first).
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Self> {
        if let Some(token) = headers
            .get(DELEGATION_HEADER)
            .and_then(|value| value.to_str().ok())
        {
            return Some(Self::Delegation(token.into()));
        }
        let encoded = headers.get(EVENT_HEADER)?;
        let bytes = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            encoded.as_bytes(),
        )
        .or_else(|_| base64::Engine::decode(&base64::engine::general_purpose::STANDARD, encoded.as_bytes()))
        .ok()?;
        Some(Self::Event(bytes.into()))
    }

    /// Writes this context into outgoing metadata.
    pub fn attach(&self, metadata: &mut MetadataMap) {
        match self {
            Self::Delegation(token) => {
                if let Ok(value) = MetadataValue::try_from(&**token) {
                    metadata.insert(DELEGATION_HEADER, value);
                }
            }
            Self::Event(entry) => {
                metadata.insert_bin(EVENT_HEADER, MetadataValue::from_bytes(entry));
            }
        }
    }
}

tokio::task_local! {
    static CONTEXT: CustomerContext;
}

/// Runs `work` acting for the customer `context` proves; every call it makes carries it.
pub fn acting_for<F: std::future::Future>(
    context: CustomerContext,
    work: F,
) -> tokio::task::futures::TaskLocalFuture<CustomerContext, F> {
    CONTEXT.scope(context, work)
}

/// The context the current work acts in, if any.
pub fn current() -> Option<CustomerContext> {
    CONTEXT.try_with(Clone::clone).ok()
}

/// Attaches the current context, if any, to outgoing metadata (`crate::grpc::outgoing`).
pub fn attach_current(metadata: &mut MetadataMap) {
    let _ = CONTEXT.try_with(|context| context.attach(metadata));
}

/// What a verified context says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvenCustomer {
    pub customer_id: Uuid,
    /// The API key of a delegation, or `stream:event id` of an event.
    pub origin: String,
}

/// Verifies the customer contexts a service is shown.
#[derive(Clone, Debug)]
pub struct CustomerAuthority {
    tokens: TokenVerifier,
    events: EventVerifier,
    stream_prefix: Arc<str>,
}

fn refused(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::Forbidden, message)
}

impl CustomerAuthority {
    /// Verifies delegations with `tokens`' trust set and events with `events`, accepting only
    /// events of streams under `stream_prefix` (this deployment's).
    pub fn new(tokens: TokenVerifier, events: EventVerifier, stream_prefix: &str) -> Self {
        Self {
            tokens,
            events,
            stream_prefix: stream_prefix.into(),
        }
    }

    /// Checks that `context` proves acting for `customer_id`; `forbidden` otherwise.
    pub fn verify(
        &self,
        context: Option<&CustomerContext>,
        customer_id: Uuid,
    ) -> Result<ProvenCustomer, ApiError> {
        let proven = match context {
            None => {
                return Err(refused(
                    "a service acts for a customer only with the gateway's delegation or a signed event of that customer",
                ));
            }
            Some(CustomerContext::Delegation(token)) => {
                let delegation = self.tokens.verify_delegation(token)?;
                ProvenCustomer {
                    customer_id: delegation.customer_id,
                    origin: format!("key {}", delegation.key_id),
                }
            }
            Some(CustomerContext::Event(bytes)) => self.verify_event(bytes)?,
        };
        if proven.customer_id != customer_id {
            tracing::warn!(
                claimed = %customer_id,
                proven = %proven.customer_id,
                origin = %proven.origin,
                "a service claimed a customer its proof is not for"
            );
            return Err(refused("the caller's proof is for another customer"));
        }
        Ok(proven)
    }

    fn verify_event(&self, bytes: &[u8]) -> Result<ProvenCustomer, ApiError> {
        let entry = SignedEntry::decode(bytes).map_err(|_| refused("the signed event is malformed"))?;
        let own_stream = entry
            .stream
            .strip_prefix(&*self.stream_prefix)
            .is_some_and(|rest| rest.starts_with(":events:"));
        if !own_stream {
            return Err(refused("the signed event is not of this deployment's streams"));
        }
        self.events
            .verify(
                &entry.stream,
                Some(entry.kid.as_bytes()),
                Some(&entry.signature),
                &entry.envelope,
            )
            .map_err(|rejection| refused(format!("the signed event is refused: {rejection}")))?;
        let envelope = EventEnvelope::decode(entry.envelope.as_slice())
            .map_err(|_| refused("the signed event is malformed"))?;
        if crate::streams::owner_of_stream(&entry.stream) != Some(envelope.source.as_str()) {
            return Err(refused("the signed event's source does not own its stream"));
        }
        let occurred = chrono::DateTime::parse_from_rfc3339(&envelope.occurred_at)
            .map_err(|_| refused("the signed event has no valid time"))?;
        let age = crate::time::now().signed_duration_since(occurred.with_timezone(&chrono::Utc));
        if age.to_std().is_ok_and(|age| age > EVENT_CONTEXT_MAX_AGE) {
            return Err(refused("the signed event is too old to act on"));
        }
        let customer_id = Uuid::parse_str(&envelope.customer_id)
            .map_err(|_| refused("the signed event names no customer"))?;
        Ok(ProvenCustomer {
            customer_id,
            origin: format!("{}:{}", entry.stream, envelope.id),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_signing::EventSigner;
    use crate::principal::{Principal, PrincipalKind};
    use crate::tokens::{SigningKey, TokenIssuer, TrustedKeys};

    fn authority() -> CustomerAuthority {
        let tokens = TokenVerifier::new("payments-svc", TrustedKeys::development());
        CustomerAuthority::new(tokens, EventVerifier::development(), "lab")
    }

    fn customer(id: Uuid) -> Principal {
        Principal {
            kind: PrincipalKind::Customer,
            subject: "key_1".into(),
            customer_id: Some(id),
            scopes: vec!["orders:write".into()],
            roles: vec![],
            spend_limit_cents: None,
            operator_id: None,
            credential_id: None,
            sandbox: false,
        }
    }

    fn delegation(issuer: &str, customer_id: Uuid) -> CustomerContext {
        let issuer = TokenIssuer::new(issuer, SigningKey::development(issuer));
        let token = issuer
            .delegation(&customer(customer_id), "req-1")
            .expect("a delegation");
        CustomerContext::Delegation(token.into())
    }

    fn event(
        customer_id: Uuid,
        occurred_at: chrono::DateTime<chrono::Utc>,
        stream: &str,
        signer: &str,
    ) -> CustomerContext {
        let envelope = EventEnvelope {
            id: Uuid::now_v7().to_string(),
            r#type: "payment.confirmed".into(),
            occurred_at: crate::time::rfc3339(occurred_at),
            customer_id: customer_id.to_string(),
            source: "payments-svc".into(),
            ..Default::default()
        }
        .encode_to_vec();
        let signer = EventSigner::development(signer);
        CustomerContext::event(
            stream,
            &envelope,
            signer.kid().as_bytes(),
            &signer.sign(stream, &envelope),
        )
    }

    #[test]
    fn a_gateway_delegation_proves_its_customer_and_no_other() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let proof = delegation("gateway", a);
        let proven = authority().verify(Some(&proof), a).unwrap();
        assert_eq!(proven.origin, "key key_1");
        assert_eq!(
            authority().verify(Some(&proof), b).unwrap_err().code,
            ErrorCode::Forbidden
        );
        assert_eq!(
            authority().verify(None, a).unwrap_err().code,
            ErrorCode::Forbidden
        );
    }

    #[test]
    fn a_delegation_signed_by_a_service_or_a_principal_token_is_no_delegation() {
        let a = Uuid::now_v7();
        assert!(authority().verify(Some(&delegation("orders-svc", a)), a).is_err());
        let gateway = TokenIssuer::new("gateway", SigningKey::development("gateway"));
        let principal_token = gateway.token(&customer(a), "payments-svc");
        let context = CustomerContext::Delegation(principal_token);
        assert!(authority().verify(Some(&context), a).is_err());
        let mut forged = delegation("gateway", a);
        if let CustomerContext::Delegation(token) = &mut forged {
            let mut text = token.to_string();
            text.push('x');
            *token = text.into();
        }
        assert!(authority().verify(Some(&forged), a).is_err());
    }

    #[test]
    fn a_signed_event_proves_its_customer_only_on_this_deployments_streams_and_while_recent() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let now = crate::time::now();
        let good = event(a, now, "lab:events:payments", "payments-svc");
        assert!(authority().verify(Some(&good), a).is_ok());
        assert!(authority().verify(Some(&good), b).is_err(), "another customer");
        let elsewhere = event(a, now, "staging:events:payments", "payments-svc");
        assert!(
            authority().verify(Some(&elsewhere), a).is_err(),
            "another deployment's stream"
        );
        let by_orders = event(a, now, "lab:events:payments", "orders-svc");
        assert!(
            authority().verify(Some(&by_orders), a).is_err(),
            "not the stream owner's key"
        );
        let old = event(
            a,
            now - chrono::Duration::days(8),
            "lab:events:payments",
            "payments-svc",
        );
        assert!(authority().verify(Some(&old), a).is_err(), "too old");
        let CustomerContext::Event(bytes) = good else {
            unreachable!()
        };
        let mut entry = SignedEntry::decode(&*bytes).unwrap();
        let mut envelope = EventEnvelope::decode(entry.envelope.as_slice()).unwrap();
        envelope.customer_id = b.to_string();
        entry.envelope = envelope.encode_to_vec();
        let tampered = CustomerContext::Event(entry.encode_to_vec().into());
        assert!(
            authority().verify(Some(&tampered), b).is_err(),
            "an altered customer"
        );
    }

    #[test]
    fn a_context_survives_the_trip_through_grpc_metadata() {
        let a = Uuid::now_v7();
        for context in [
            delegation("gateway", a),
            event(a, crate::time::now(), "lab:events:payments", "payments-svc"),
        ] {
            let mut metadata = MetadataMap::new();
            context.attach(&mut metadata);
            let headers = metadata.into_headers();
            let read = CustomerContext::from_headers(&headers).expect("a context");
            assert!(authority().verify(Some(&read), a).is_ok());
        }
    }
}
