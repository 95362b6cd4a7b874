//! The built-in sandbox processor: our pay page takes the well-known test card numbers
//! (`crate::domain::checkout::TEST_CARDS`) and this processor answers as a card network would.
//! It has no webhooks: a successful charge settles synchronously.

use super::{CardProcessor, Charge, OpenRequest, OpenedSession, RefundOutcome, RefundRequest, WebhookEvent};
use crate::domain::checkout::{CardBehaviour, ProcessorKind, random_base62};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use platform::error::{ApiError, ErrorCode};

/// The sandbox processor.
#[derive(Clone, Copy, Debug, Default)]
pub struct SandboxProcessor;

impl CardProcessor for SandboxProcessor {
    fn kind(&self) -> ProcessorKind {
        ProcessorKind::Sandbox
    }

    fn open<'a>(
        &'a self,
        _request: &'a OpenRequest,
    ) -> BoxFuture<'a, Result<Option<OpenedSession>, ApiError>> {
        Box::pin(async { Ok(None) })
    }

    fn expire<'a>(&'a self, _processor_session_id: &'a str) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(async { Ok(()) })
    }

    fn charge(&self, behaviour: CardBehaviour, authenticated: bool) -> Result<Charge, ApiError> {
        Ok(match behaviour {
            CardBehaviour::Succeeds => succeeded(),
            CardBehaviour::RequiresAuthentication if authenticated => succeeded(),
            CardBehaviour::RequiresAuthentication => Charge::RequiresAuthentication,
            CardBehaviour::GenericDecline => Charge::Declined {
                code: "generic_decline",
                message: "Your card was declined.",
            },
            CardBehaviour::InsufficientFunds => Charge::Declined {
                code: "insufficient_funds",
                message: "Your card has insufficient funds.",
            },
            CardBehaviour::ExpiredCard => Charge::Declined {
                code: "expired_card",
                message: "Your card has expired.",
            },
        })
    }

    fn refund<'a>(&'a self, request: &'a RefundRequest) -> BoxFuture<'a, Result<RefundOutcome, ApiError>> {
        // A card network refunds at once; the reference follows from our id, so a retry of the
        // same refund answers the same.
        let reference = format!("re_sandbox_{}", request.refund_id.replace('-', ""));
        Box::pin(async move { Ok(RefundOutcome::Succeeded { reference }) })
    }

    fn verify_webhook(
        &self,
        _payload: &[u8],
        _signature: &str,
        _now: DateTime<Utc>,
    ) -> Result<WebhookEvent, ApiError> {
        Err(ApiError::new(
            ErrorCode::NotFound,
            "the sandbox processor sends no webhooks",
        ))
    }
}

fn succeeded() -> Charge {
    Charge::Succeeded {
        reference: format!("ch_sandbox_{}", random_base62(24)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_test_card_is_charged_as_its_behaviour_says() {
        let sandbox = SandboxProcessor;
        assert!(matches!(
            sandbox.charge(CardBehaviour::Succeeds, false).unwrap(),
            Charge::Succeeded { .. }
        ));
        assert_eq!(
            sandbox
                .charge(CardBehaviour::RequiresAuthentication, false)
                .unwrap(),
            Charge::RequiresAuthentication
        );
        assert!(matches!(
            sandbox
                .charge(CardBehaviour::RequiresAuthentication, true)
                .unwrap(),
            Charge::Succeeded { .. }
        ));
        for (behaviour, expected) in [
            (CardBehaviour::GenericDecline, "generic_decline"),
            (CardBehaviour::InsufficientFunds, "insufficient_funds"),
            (CardBehaviour::ExpiredCard, "expired_card"),
        ] {
            let Charge::Declined { code, .. } = sandbox.charge(behaviour, false).unwrap() else {
                panic!("{behaviour:?} declines");
            };
            assert_eq!(code, expected);
        }
    }
}
