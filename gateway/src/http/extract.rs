//! Extractors whose every refusal is an enveloped 400: JSON bodies (`invalid_body` with
//! `details.path` and `details.reason`; [`OptionalApiJson`] also takes an empty body), query
//! strings (`invalid_request` with `details.field`), the `Idempotency-Key` header (its errors
//! name `details.field` = `header.idempotency-key`; [`OptionalIdempotencyKey`] where it is optional), the
//! `{reference}` and `{endpointId}` path segments, and the authenticated caller.

use crate::caller::Caller;
use crate::http::error::ErrorResponse;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use http::request::Parts;
use http::{HeaderMap, header};
use platform::error::{ApiError, ErrorCode};
use serde::de::DeserializeOwned;
use uuid::Uuid;

/// Header carrying the idempotency key of a mutating request.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";
/// `details.field` of a refused `Idempotency-Key` (the `header.` location of the input rules).
pub const IDEMPOTENCY_KEY_FIELD: &str = "header.idempotency-key";

/// A JSON body deserialized strictly (the target types refuse unknown fields).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ErrorResponse;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(request.headers()) {
            return Err(invalid_body("", "the Content-Type must be application/json").into());
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| invalid_body("", &rejection.body_text()))?;
        parse_json(&bytes).map(ApiJson).map_err(ErrorResponse)
    }
}

/// A JSON body that may be absent: an empty (or all-whitespace) body, whatever its
/// Content-Type, is `T::default()`; anything else is read like [`ApiJson`].
pub struct OptionalApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalApiJson<T> {
    type Rejection = ErrorResponse;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json = is_json(request.headers());
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| invalid_body("", &rejection.body_text()))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        if !json {
            return Err(invalid_body("", "the Content-Type must be application/json").into());
        }
        parse_json(&bytes).map(OptionalApiJson).map_err(ErrorResponse)
    }
}

/// True when the `Content-Type` is JSON (`application/json` or `application/*+json`).
pub fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Deserializes a JSON document, naming the path of the first problem.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let reason = if inner.is_syntax() || inner.is_eof() {
            format!(
                "the body is not valid JSON: {}",
                strip_location(&inner.to_string())
            )
        } else {
            strip_location(&inner.to_string())
        };
        invalid_body(&field_path(&path, &reason), &reason)
    })?;
    deserializer
        .end()
        .map_err(|_| invalid_body("", "the body has trailing characters after the JSON value"))?;
    Ok(value)
}

/// Deserializes an already parsed JSON value (MCP tool arguments) like [`parse_json`]: the same
/// `invalid_body` error naming the path of the first problem.
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let reason = strip_location(&error.into_inner().to_string());
        invalid_body(&field_path(&path, &reason), &reason)
    })
}

/// Deserializes query parameters given as a JSON object (MCP tool arguments): 400
/// `invalid_request` naming `details.field`, as a flawed query string is.
pub fn query_from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let reason = error.into_inner().to_string();
        let field = field_path(&path, &reason);
        ApiError::field(
            ErrorCode::InvalidRequest,
            &field,
            format!("invalid query parameter {field}: {reason}"),
        )
        .with_details(serde_json::json!({ "reason": reason }))
    })
}

/// `invalid_body` with `details { path, reason }`.
fn invalid_body(path: &str, reason: &str) -> ApiError {
    let message = if path.is_empty() {
        format!("invalid body: {reason}")
    } else {
        format!("invalid body at {path}: {reason}")
    };
    ApiError::new(ErrorCode::InvalidBody, message)
        .with_details(serde_json::json!({ "path": path, "reason": reason }))
}

/// Removes serde_json's " at line L column C" suffix.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

/// The path of the offending field: serde names the parent object for missing and unknown
/// fields, so their name (from the message) is appended.
fn field_path(path: &str, reason: &str) -> String {
    let parent = if path == "." { "" } else { path };
    let named = ["missing field `", "unknown field `"].iter().find_map(|prefix| {
        reason
            .strip_prefix(prefix)
            .and_then(|rest| rest.split('`').next())
    });
    let Some(field) = named else {
        return parent.to_owned();
    };
    if parent.rsplit('.').next() == Some(field) {
        parent.to_owned()
    } else if parent.is_empty() {
        field.to_owned()
    } else {
        format!("{parent}.{field}")
    }
}

/// A query string deserialized strictly into `T`.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        let deserializer = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(deserializer)
            .map(ApiQuery)
            .map_err(|error| {
                let path = error.path().to_string();
                let reason = error.into_inner().to_string();
                let field = field_path(&path, &reason);
                let message = format!("invalid query parameter {field}: {reason}");
                ErrorResponse(
                    ApiError::field(ErrorCode::InvalidRequest, &field, message)
                        .with_details(serde_json::json!({ "reason": reason })),
                )
            })
    }
}

/// The validated `Idempotency-Key` header (8 to 255 visible ASCII characters).
pub struct IdempotencyKey(pub String);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let field = serde_json::json!({ "field": IDEMPOTENCY_KEY_FIELD });
        let value = parts.headers.get(IDEMPOTENCY_KEY_HEADER).ok_or_else(|| {
            ApiError::new(
                ErrorCode::IdempotencyKeyMissing,
                "the Idempotency-Key header is required",
            )
            .with_details(field.clone())
        })?;
        // A value that is not visible ASCII (control characters, obs-text) is not text at all.
        let key = value.to_str().unwrap_or("\u{0}");
        platform::grpc::validate_idempotency_key(key).map_err(|error| error.with_details(field))?;
        Ok(Self(key.to_owned()))
    }
}

/// The `Idempotency-Key` header of an operation that takes one without requiring it: absent is
/// `None`, present it has the rules of [`IdempotencyKey`].
pub struct OptionalIdempotencyKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for OptionalIdempotencyKey {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        if !parts.headers.contains_key(IDEMPOTENCY_KEY_HEADER) {
            return Ok(Self(None));
        }
        let IdempotencyKey(key) = IdempotencyKey::from_request_parts(parts, state).await?;
        Ok(Self(Some(key)))
    }
}

/// The `{reference}` path segment (a UUID or a public reference; the service resolves it).
pub struct Reference(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Reference {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(reference) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| {
                ApiError::field(
                    ErrorCode::InvalidRequest,
                    "reference",
                    "the reference path segment is not valid",
                )
            })?;
        Ok(Self(reference))
    }
}

/// The `{endpointId}` path segment: a UUID, else 400 `invalid_request` with `details.field` =
/// `endpointId` (never a service call).
pub struct EndpointId(pub Uuid);

impl<S: Send + Sync> FromRequestParts<S> for EndpointId {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let segment = Path::<String>::from_request_parts(parts, state).await.ok();
        let id = segment.and_then(|Path(segment)| Uuid::try_parse(&segment).ok());
        id.map(Self).ok_or_else(|| {
            ApiError::field(
                ErrorCode::InvalidRequest,
                "endpointId",
                "endpointId must be a UUID",
            )
            .into()
        })
    }
}

/// The `{ticketId}` path segment: a ticket's UUID or number (`TKT-…`); orders-svc resolves it
/// (anything else is 404 `not_found`, like another customer's ticket).
pub struct TicketId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for TicketId {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(ticket) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| {
                ApiError::field(
                    ErrorCode::InvalidRequest,
                    "ticketId",
                    "the ticketId path segment is not valid",
                )
            })?;
        Ok(Self(ticket))
    }
}

/// The `{consentId}` path segment: a consent's UUID; results-svc resolves it (anything else is
/// 404 `not_found`, like another customer's consent).
pub struct ConsentId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ConsentId {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(consent) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| {
                ApiError::field(
                    ErrorCode::InvalidRequest,
                    "consentId",
                    "the consentId path segment is not valid",
                )
            })?;
        Ok(Self(consent))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ErrorResponse;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::internal("a handler that needs a caller is not behind the auth layer").into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        quote_id: String,
        confirm: bool,
        #[serde(default)]
        items: Vec<Item>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        compound_name: String,
    }

    fn details(body: &str) -> serde_json::Value {
        let error = parse_json::<Body>(body.as_bytes()).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidBody);
        error.details.unwrap()
    }

    #[test]
    fn body_errors_name_the_path_of_the_offending_field() {
        assert_eq!(details(r#"{"quoteId":"q","confirm":"yes"}"#)["path"], "confirm");
        assert_eq!(details(r#"{"quoteId":"q"}"#)["path"], "confirm");
        assert_eq!(
            details(r#"{"quoteId":"q","confirm":true,"extra":1}"#)["path"],
            "extra"
        );
        assert_eq!(
            details(r#"{"quoteId":"q","confirm":true,"items":[{"compoundName":"a","x":1}]}"#)["path"],
            "items[0].x"
        );
        assert_eq!(
            details(r#"{"quoteId":"q","confirm":true,"items":[{}]}"#)["path"],
            "items[0].compoundName"
        );
        let syntax = details(r#"{"quoteId":"#);
        assert!(
            syntax["reason"]
                .as_str()
                .unwrap()
                .starts_with("the body is not valid JSON"),
            "{syntax}"
        );
        assert!(!syntax["reason"].as_str().unwrap().contains("line"));
        assert_eq!(details(r#"{"quoteId":"q","confirm":true} x"#)["path"], "");
    }

    #[test]
    fn json_content_types_are_recognized() {
        let mut headers = HeaderMap::new();
        assert!(!is_json(&headers));
        headers.insert(
            header::CONTENT_TYPE,
            "Application/JSON; charset=utf-8".parse().unwrap(),
        );
        assert!(is_json(&headers));
        headers.insert(
            header::CONTENT_TYPE,
            "application/merge-patch+json".parse().unwrap(),
        );
        assert!(is_json(&headers));
        headers.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert!(!is_json(&headers));
    }
}
