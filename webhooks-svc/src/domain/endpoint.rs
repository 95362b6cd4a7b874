//! Endpoints: their states, the validated registration request, and the answer that carries a
//! freshly issued signing secret.

use crate::ssrf::{GuardError, WebhookUrl};
use chrono::{DateTime, Utc};
use platform::error::{ApiError, ErrorCode};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Longest endpoint description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Default of how many endpoints (active or disabled, not deleted) one customer may have.
pub const DEFAULT_MAX_ENDPOINTS_PER_CUSTOMER: u32 = 20;

/// Lifecycle of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndpointStatus {
    /// Receives deliveries.
    Active,
    /// Stopped after a 410 Gone (or by staff); keeps its history.
    Disabled,
    /// Deleted by the customer; invisible to the customer.
    Deleted,
}

impl EndpointStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Disabled => "disabled",
            Self::Deleted => "deleted",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "active" => Some(Self::Active),
            "disabled" => Some(Self::Disabled),
            "deleted" => Some(Self::Deleted),
            _ => None,
        }
    }
}

/// An endpoint as safe metadata: never its secrets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    pub id: Uuid,
    pub customer_id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
    pub status: EndpointStatus,
    pub disabled_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Until when the previous secret also signs, after a rotation.
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
}

/// An endpoint with the signing secret just issued for it: the answer of registration and of
/// rotation, shown once (and sealed when stored for an idempotent replay).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IssuedSecret {
    pub endpoint: Endpoint,
    #[serde(serialize_with = "expose")]
    pub signing_secret: SecretString,
}

fn expose<S: serde::Serializer>(secret: &SecretString, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(secret.expose_secret())
}

/// A registration whose shape was checked (its addresses are vetted by the service).
#[derive(Clone, Debug, PartialEq)]
pub struct NewEndpoint {
    pub url: WebhookUrl,
    pub events: Vec<String>,
    pub description: Option<String>,
}

impl NewEndpoint {
    /// Checks the URL shape, the event names and the description.
    pub fn validate(url: &str, events: &[String], description: Option<&str>) -> Result<Self, ApiError> {
        let url = WebhookUrl::parse(url).map_err(invalid_url)?;
        let events = proto::event_data::select_events(events)?;
        let description = description.map(str::trim).filter(|text| !text.is_empty());
        if description.is_some_and(|text| text.chars().count() > MAX_DESCRIPTION_CHARS) {
            return Err(ApiError::field(
                ErrorCode::InvalidRequest,
                "description",
                "description must be at most 500 characters",
            ));
        }
        Ok(Self {
            url,
            events,
            description: description.map(str::to_owned),
        })
    }
}

/// 409 `webhook_endpoint_limit_reached`: the customer already has `limit` endpoints.
pub fn endpoint_limit_reached(limit: u32) -> ApiError {
    ApiError::new(
        ErrorCode::WebhookEndpointLimitReached,
        format!("a customer may have at most {limit} webhook endpoints; delete one first"),
    )
    .with_details(serde_json::json!({ "limit": limit }))
}

/// 400 `invalid_webhook_url` on the `url` field, saying why.
pub fn invalid_url(error: GuardError) -> ApiError {
    ApiError::field(ErrorCode::InvalidWebhookUrl, "url", error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_checks_url_events_and_description() {
        let valid = NewEndpoint::validate("https://hooks.example.com/x", &[], Some("  ")).unwrap();
        assert_eq!(valid.events, vec!["coa.published".to_owned()]);
        assert_eq!(valid.description, None);
        let error = NewEndpoint::validate("http://hooks.example.com/x", &[], None).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidWebhookUrl);
        assert_eq!(error.details.unwrap()["field"], "url");
        let long = "d".repeat(501);
        let error = NewEndpoint::validate("https://a.example", &[], Some(&long)).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        let error = NewEndpoint::validate("https://a.example", &["nope".to_owned()], None).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnknownEvent);
    }
}
