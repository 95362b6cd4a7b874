//! The one closed table of error codes of the mesh, each with its HTTP status and gRPC code.
//!
//! Services return [`ApiError`] converted to a `tonic::Status` whose binary details carry the
//! code and optional details as JSON; the gateway converts the status back and renders the
//! envelope `{ "error": { "code", "message", "details" } }`. Internal causes are logged where
//! they are mapped and never sent to clients. Messages are lowercase without a trailing period.

use serde::Serialize;
use serde_json::Value;
use tonic::Code;

macro_rules! error_codes {
    ($($variant:ident => ($name:literal, $http:literal, $grpc:ident, $doc:literal),)*) => {
        /// Every error code a client can receive.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $(#[doc = $doc] $variant,)*
        }

        impl ErrorCode {
            /// Every code, in table order (for documentation and tests).
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The wire name of the code.
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $name,)* }
            }

            /// The HTTP status the gateway answers with.
            pub fn http_status(self) -> u16 {
                match self { $(ErrorCode::$variant => $http,)* }
            }

            /// The gRPC code services answer with.
            pub fn grpc_code(self) -> Code {
                match self { $(ErrorCode::$variant => Code::$grpc,)* }
            }

            /// What the code means, for the documentation.
            pub fn description(self) -> &'static str {
                match self { $(ErrorCode::$variant => $doc,)* }
            }

            /// Looks a code up by its wire name.
            pub fn from_name(name: &str) -> Option<ErrorCode> {
                match name { $($name => Some(ErrorCode::$variant),)* _ => None }
            }
        }
    };
}

error_codes! {
    InvalidRequest => ("invalid_request", 400, InvalidArgument, "a field or parameter is invalid; details.field names it"),
    InvalidBody => ("invalid_body", 400, InvalidArgument, "the body is not valid JSON of the expected shape (unknown field, wrong type, missing field)"),
    InvalidCursor => ("invalid_cursor", 400, InvalidArgument, "the pagination cursor is malformed, was edited, or belongs to another listing"),
    ConfirmationRequired => ("confirmation_required", 400, InvalidArgument, "the operation needs `confirm: true`"),
    IdempotencyKeyMissing => ("idempotency_key_missing", 400, InvalidArgument, "the operation requires the Idempotency-Key header"),
    IdempotencyKeyInvalid => ("idempotency_key_invalid", 400, InvalidArgument, "the Idempotency-Key header must be 8 to 255 visible ASCII characters"),
    UnknownCategory => ("unknown_category", 400, InvalidArgument, "the category id is not in the current catalog"),
    UnknownTest => ("unknown_test", 400, InvalidArgument, "a test or bundle id is not in the current catalog"),
    TestNotInCategory => ("test_not_in_category", 400, InvalidArgument, "a test or bundle cannot be quoted in the chosen category"),
    DuplicateTest => ("duplicate_test", 400, InvalidArgument, "a test is selected twice, directly or through a bundle"),
    UnknownTurnaround => ("unknown_turnaround", 400, InvalidArgument, "the turnaround is not offered"),
    DuplicateCompound => ("duplicate_compound", 400, InvalidArgument, "a compound name appears twice"),
    UnknownCompound => ("unknown_compound", 400, InvalidArgument, "sampleMetadata names a compound that is not on the quote (exact, case-sensitive match)"),
    InvalidWebhookUrl => ("invalid_webhook_url", 400, InvalidArgument, "the webhook URL must be https to a public address, without user info"),
    UnknownEvent => ("unknown_event", 400, InvalidArgument, "an event type is not one of the documented event kinds"),
    InvalidPaymentMethod => ("invalid_payment_method", 400, InvalidArgument, "the payment method is not one of the accepted spellings"),
    PaymentMethodUnavailable => ("payment_method_unavailable", 400, InvalidArgument, "the payment rail exists but is not yet offered by this deployment"),
    InvalidSignature => ("invalid_signature", 400, InvalidArgument, "a payment processor's webhook signature is forged, malformed or outside its timestamp tolerance (a replay)"),
    Unauthenticated => ("unauthenticated", 401, Unauthenticated, "the API key is missing, malformed, unknown or revoked"),
    InsufficientScope => ("insufficient_scope", 403, PermissionDenied, "the key lacks a scope the operation needs; details.required lists it"),
    SpendLimitExceeded => ("spend_limit_exceeded", 403, PermissionDenied, "the amount exceeds the key's spending envelope (per-order, daily or monthly cap); details give the remaining amounts"),
    Forbidden => ("forbidden", 403, PermissionDenied, "the caller may not perform this internal operation"),
    NotFound => ("not_found", 404, NotFound, "the resource does not exist or belongs to another customer"),
    QuoteNotFound => ("quote_not_found", 404, NotFound, "the quote does not exist or belongs to another customer"),
    QuoteExpired => ("quote_expired", 409, FailedPrecondition, "the quote has expired; create a new quote"),
    QuoteAlreadyConsumed => ("quote_already_consumed", 409, FailedPrecondition, "the quote was already used by an order"),
    CheckoutExpired => ("checkout_expired", 409, FailedPrecondition, "the checkout session expired unpaid; POST /payments/prepare mints a fresh link"),
    IdempotencyKeyReused => ("idempotency_key_reused", 409, AlreadyExists, "the Idempotency-Key was used before with a different request"),
    IdempotencyRequestInProgress => ("idempotency_request_in_progress", 409, Aborted, "a request with this Idempotency-Key is still running; retry after Retry-After seconds"),
    Conflict => ("conflict", 409, FailedPrecondition, "the resource is not in a state that allows the operation"),
    AmbiguousReference => ("ambiguous_reference", 409, FailedPrecondition, "the order reference names several resources of the kind asked for (several samples' COAs, several payments); details.candidates lists each one's own reference: ask again with one of them"),
    BankReferenceConflict => ("bank_reference_conflict", 409, AlreadyExists, "the bank reference was already recorded for another invoice or amount; details name the recorded payment"),
    WebhookEndpointLimitReached => ("webhook_endpoint_limit_reached", 409, FailedPrecondition, "the customer has the most webhook endpoints allowed (details.limit); delete one first"),
    TransactionNotFound => ("transaction_not_found", 404, NotFound, "neither chain provider knows a mined transaction with this hash (not mined yet, or on another chain); retry once it is mined"),
    TransactionReverted => ("transaction_reverted", 409, FailedPrecondition, "the transaction reverted on chain: nothing was transferred"),
    TransferAmountMismatch => ("transfer_amount_mismatch", 409, FailedPrecondition, "the payer sent the token to the treasury but not the exact amount; details.reason is underpaid or overpaid, details.receivedAtomic the amount sent"),
    TransferWrongSender => ("transfer_wrong_sender", 409, FailedPrecondition, "the transfer did not come from the expected self-custodied payer address (exchange and pooled-wallet withdrawals are not supported)"),
    TransferWrongToken => ("transfer_wrong_token", 409, FailedPrecondition, "the transfer to the treasury is of another token contract than the requested one"),
    TransferNotFound => ("transfer_not_found", 409, FailedPrecondition, "the transaction carries no transfer to the payment request's treasury address"),
    TransferAlreadyApplied => ("transfer_already_applied", 409, AlreadyExists, "the matching transfer log already pays another payment request; one log never pays two"),
    PaymentRequestExpired => ("payment_request_expired", 409, FailedPrecondition, "the stablecoin payment request expired before the transfer; a late transfer is recorded for staff, never applied"),
    PickupQuoteInvalid => ("pickup_quote_invalid", 400, InvalidArgument, "the pickup quote token was not issued for this order or was edited"),
    PickupDateUnavailable => ("pickup_date_unavailable", 400, InvalidArgument, "the pickup date or window is not one the quote token offers (past, weekend, holiday or after the cut-off)"),
    PickupQuoteExpired => ("pickup_quote_expired", 409, FailedPrecondition, "the pickup quote token has expired; read the pickup options again"),
    OrderNotPaid => ("order_not_paid", 409, FailedPrecondition, "the operation needs the order to be paid first"),
    PickupAlreadyRequested => ("pickup_already_requested", 409, FailedPrecondition, "the shipment already has a door pickup"),
    OrderNotCancellable => ("order_not_cancellable", 409, FailedPrecondition, "the order is already cancelled or completed; a completed order's questions go to a support ticket"),
    CancelRequestPending => ("cancel_request_pending", 409, FailedPrecondition, "a cancellation request of this order awaits a decision (details.cancelRequestId); a human answers it"),
    LabelVoided => ("label_voided", 409, FailedPrecondition, "the order was cancelled and its prepaid label voided with the carrier (details.voidedAt, details.refundStatus); the label can no longer be downloaded, emailed or picked up"),
    AddonSampleNotHeld => ("addon_sample_not_held", 409, FailedPrecondition, "add-on tests need the lab to hold the line's sample: the order is not received yet, or it is cancelled"),
    SampleRetentionExpired => ("sample_retention_expired", 409, FailedPrecondition, "the retained portion of the sample is past its retention period (details.retainUntil); order a new test instead"),
    SampleConsumed => ("sample_consumed", 409, FailedPrecondition, "the retained portion of the sample was disposed of or arrived insufficient; nothing is left to test"),
    AddonMatrixMismatch => ("addon_matrix_mismatch", 409, FailedPrecondition, "the test is not offered for the sample's matrix (the order's category, details.categoryId); it cannot run on this sample"),
    AddonSampleInsufficient => ("addon_sample_insufficient", 409, FailedPrecondition, "the retained sample cannot give the amount the tests need (details.unitsAvailable, details.unitsNeeded: one retained unit per test)"),
    ConsentRequired => ("consent_required", 409, FailedPrecondition, "no active consent of this recipient is on record for the customer (never recorded, or withdrawn); record the recipient's consent first"),
    ScenarioNotApplicable => ("scenario_not_applicable", 409, FailedPrecondition, "the simulated scenario does not fit the order's state now (details.scenario, details.status, details.needs); docs/sandbox.md"),
    RateLimited => ("rate_limited", 429, ResourceExhausted, "too many requests; retry after Retry-After seconds"),
    CatalogUnavailable => ("catalog_unavailable", 503, Unavailable, "no catalog has been imported yet"),
    RawDataUnavailable => ("raw_data_unavailable", 503, Unavailable, "the released instrument files cannot be signed now (the file store refuses or is unreachable); nothing is wrong with the request, retry later"),
    ServiceUnavailable => ("service_unavailable", 503, Unavailable, "a dependency is unavailable; retry with the same Idempotency-Key"),
    Overloaded => ("overloaded", 503, Unavailable, "the gateway has as many requests in flight as it takes; retry after Retry-After seconds"),
    ChainUnavailable => ("chain_unavailable", 503, Unavailable, "the chain cannot be verified now: a provider is down, the two providers disagree, or a provider serves another chain than the configured one (details.reason); nothing was recorded, retry later"),
    Timeout => ("timeout", 504, DeadlineExceeded, "the request took longer than the gateway's time limit; it may still complete: retry with the same Idempotency-Key"),
    Internal => ("internal_error", 500, Internal, "an unexpected error; it was logged with the request id"),
}

/// An error as returned to a client: a code, a message and optional structured details.
#[derive(Clone, Debug, PartialEq, Serialize, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct ApiError {
    #[serde(serialize_with = "serialize_code")]
    pub code: ErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

fn serialize_code<S: serde::Serializer>(code: &ErrorCode, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(code.as_str())
}

impl ApiError {
    /// Creates an error without details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// Creates an error whose details name the offending field.
    pub fn field(code: ErrorCode, field: &str, message: impl Into<String>) -> Self {
        Self::new(code, message).with_details(serde_json::json!({ "field": field }))
    }

    /// Attaches details, merging into existing object details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = match (self.details.take(), details) {
            (Some(Value::Object(mut existing)), Value::Object(extra)) => {
                existing.extend(extra);
                Some(Value::Object(existing))
            }
            (_, details) => Some(details),
        };
        self
    }

    /// Logs an internal cause and returns the generic internal error that clients see.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(ErrorCode::Internal, "an unexpected error occurred")
    }

    /// Logs an unavailable dependency and returns the retryable unavailable error.
    pub fn unavailable(what: &str, cause: impl std::fmt::Display) -> Self {
        tracing::warn!(dependency = what, error = %cause, "dependency unavailable");
        Self::new(
            ErrorCode::ServiceUnavailable,
            format!("{what} is unavailable, retry later"),
        )
    }

    /// Seconds the client should wait before retrying, when the details carry them.
    pub fn retry_after_seconds(&self) -> Option<u64> {
        self.details.as_ref()?.get("retryAfterSeconds")?.as_u64()
    }

    /// Rebuilds an error from a gRPC status received from a service.
    pub fn from_status(status: &tonic::Status) -> Self {
        if let Ok(wire) = serde_json::from_slice::<WireError>(status.details())
            && let Some(code) = ErrorCode::from_name(&wire.code)
        {
            return Self {
                code,
                message: status.message().to_owned(),
                details: wire.details,
            };
        }
        let code = match status.code() {
            Code::InvalidArgument | Code::OutOfRange => ErrorCode::InvalidRequest,
            Code::NotFound => ErrorCode::NotFound,
            Code::AlreadyExists | Code::Aborted | Code::FailedPrecondition => ErrorCode::Conflict,
            Code::PermissionDenied => ErrorCode::Forbidden,
            Code::Unauthenticated => ErrorCode::Unauthenticated,
            Code::ResourceExhausted => ErrorCode::RateLimited,
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled => {
                return Self::unavailable("an internal service", status.message());
            }
            _ => return Self::internal(format!("grpc status {:?}: {}", status.code(), status.message())),
        };
        Self::new(code, status.message().to_owned())
    }
}

#[derive(serde::Deserialize, Serialize)]
struct WireError {
    code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Value>,
}

impl From<ApiError> for tonic::Status {
    fn from(error: ApiError) -> Self {
        let wire = WireError {
            code: error.code.as_str().to_owned(),
            details: error.details,
        };
        let bytes = serde_json::to_vec(&wire).unwrap_or_default();
        tonic::Status::with_details(error.code.grpc_code(), error.message, bytes.into())
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        match &error {
            sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => {
                ApiError::unavailable("the database", error)
            }
            _ => ApiError::internal(error),
        }
    }
}

impl From<proto::event_data::UnknownEvent> for ApiError {
    /// 400 `unknown_event` naming `events[i]` and listing the known event types.
    fn from(unknown: proto::event_data::UnknownEvent) -> Self {
        ApiError::field(
            ErrorCode::UnknownEvent,
            &format!("events[{}]", unknown.index),
            format!("unknown event type {:?}", unknown.event),
        )
        .with_details(serde_json::json!({ "allowed": proto::event_data::event_names() }))
    }
}

/// Returns the name of the violated constraint when `error` is a unique violation.
pub fn unique_violation(error: &sqlx::Error) -> Option<String> {
    match error {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            Some(db.constraint().unwrap_or_default().to_owned())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_a_grpc_status() {
        for &code in ErrorCode::ALL {
            let error = ApiError::field(code, "quoteId", "something is wrong");
            let status = tonic::Status::from(error.clone());
            assert_eq!(status.code(), code.grpc_code());
            assert_eq!(ApiError::from_status(&status), error);
        }
    }

    #[test]
    fn client_errors_are_never_5xx_and_names_are_unique() {
        let mut names = std::collections::HashSet::new();
        for &code in ErrorCode::ALL {
            assert!(names.insert(code.as_str()), "duplicate code {}", code.as_str());
            let server_side = matches!(
                code,
                ErrorCode::Internal
                    | ErrorCode::ServiceUnavailable
                    | ErrorCode::RawDataUnavailable
                    | ErrorCode::CatalogUnavailable
                    | ErrorCode::Overloaded
                    | ErrorCode::ChainUnavailable
                    | ErrorCode::Timeout
            );
            assert_eq!(code.http_status() >= 500, server_side, "{}", code.as_str());
        }
    }
}

/// Renders the error-code table as Markdown rows (kept in `docs/errors.md`, checked by a test).
pub fn markdown_table() -> String {
    let mut table = String::from("| Code | HTTP | gRPC | Meaning |\n|---|---|---|---|\n");
    for &code in ErrorCode::ALL {
        table.push_str(&format!(
            "| `{}` | {} | {:?} | {} |\n",
            code.as_str(),
            code.http_status(),
            code.grpc_code(),
            code.description()
        ));
    }
    table
}

#[cfg(test)]
mod docs_tests {
    #[test]
    fn docs_errors_md_lists_exactly_the_code_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md");
        let document = std::fs::read_to_string(path).expect("docs/errors.md exists");
        assert!(
            document.contains(&super::markdown_table()),
            "docs/errors.md is out of date; paste the table from platform::error::markdown_table():\n{}",
            super::markdown_table()
        );
    }
}
