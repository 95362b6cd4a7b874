//! The spec's webhook subscription rule: subscribing an endpoint to events needs
//! `webhooks:write` plus the read scope of every selected event (the table of event kinds and
//! their read scopes is `proto::event_data::EVENT_KINDS`). The gateway checks it before calling
//! webhooks-svc; the service checks event names too.

use super::{WEBHOOKS_WRITE, check};
use platform::error::{ApiError, ErrorCode};

/// Event type an endpoint subscribes to when `POST /webhooks` names none (the spec's default).
pub const DEFAULT_WEBHOOK_EVENT: &str = "coa.published";

/// The scopes a webhook subscription to `events` needs: `webhooks:write` plus the read scope of
/// every selected event (`proto::event_data::read_scope`), deduplicated. An unknown event type is
/// 400 `unknown_event` with `details.field` = `events[i]` and `details.allowed`.
pub fn subscription_scopes(events: &[String]) -> Result<Vec<&'static str>, ApiError> {
    let mut required = vec![WEBHOOKS_WRITE];
    for (index, event) in events.iter().enumerate() {
        let Some(scope) = proto::event_data::read_scope(event) else {
            return Err(unknown_event(index, event));
        };
        if !required.contains(&scope) {
            required.push(scope);
        }
    }
    Ok(required)
}

/// 400 `unknown_event` naming `events[index]` and listing the known event types.
pub fn unknown_event(index: usize, event: &str) -> ApiError {
    let allowed: Vec<&str> = proto::event_data::EVENT_KINDS
        .iter()
        .map(|(name, _)| *name)
        .collect();
    ApiError::field(
        ErrorCode::UnknownEvent,
        &format!("events[{index}]"),
        format!("unknown event type {event:?}"),
    )
    .with_details(serde_json::json!({ "allowed": allowed }))
}

/// The spec's subscription rule: `held` must contain `webhooks:write` and the read scope of every
/// event in `events`, else 403 `insufficient_scope` with `details.required` and `details.missing`.
pub fn check_subscription(events: &[String], held: &[String]) -> Result<(), ApiError> {
    let required = subscription_scopes(events)?;
    check(&required, held).map_err(|mut error| {
        error.message = format!("{} that the selected events need", error.message);
        error
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scopes::{ORDERS_READ, PAYMENTS_READ, RESULTS_READ};

    #[test]
    fn a_subscription_needs_webhooks_write_and_the_read_scope_of_every_event() {
        let events: Vec<String> = ["order.created", "payment.confirmed", "order.status_changed"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            subscription_scopes(&events).unwrap(),
            vec![WEBHOOKS_WRITE, ORDERS_READ, PAYMENTS_READ]
        );
        let held: Vec<String> = vec![WEBHOOKS_WRITE.into(), ORDERS_READ.into()];
        let error = check_subscription(&events, &held).unwrap_err();
        assert_eq!(error.code, ErrorCode::InsufficientScope);
        let details = error.details.unwrap();
        assert_eq!(details["missing"], serde_json::json!(["payments:read"]));
        assert_eq!(
            details["required"],
            serde_json::json!(["webhooks:write", "orders:read", "payments:read"])
        );
        let default = vec![DEFAULT_WEBHOOK_EVENT.to_owned()];
        assert_eq!(
            subscription_scopes(&default).unwrap(),
            vec![WEBHOOKS_WRITE, RESULTS_READ]
        );
        let unknown = vec!["order.created".to_owned(), "payment.succeeded".to_owned()];
        let error = subscription_scopes(&unknown).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnknownEvent);
        assert_eq!(error.details.unwrap()["field"], "events[1]");
    }
}
