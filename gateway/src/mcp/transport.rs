//! The HTTP side of the Streamable HTTP transport, checked before a message is read: DNS-rebinding
//! protection (a present `Origin` that is not allowed, or a `Host` outside the configured hosts,
//! is 403), the media types (`Content-Type` must be JSON: 415; an `Accept` that excludes JSON:
//! 406) and the `MCP-Protocol-Version` header (an unsupported value: 400). Every refusal carries a
//! JSON-RPC error body.
//!
//! Settings: `GATEWAY_MCP_ALLOWED_ORIGINS` (comma-separated origins; an origin without a port
//! allows every port; `*` allows any origin; default: the loopback origins
//! `http://localhost`, `http://127.0.0.1` and `http://[::1]` on any port) and
//! `GATEWAY_MCP_ALLOWED_HOSTS` (comma-separated host names without port; default: empty, which
//! does not check `Host`; deployments set their public host names).

use super::jsonrpc::{INVALID_REQUEST, Refusal};
use crate::http::extract::is_json;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;

/// The protocol version this server speaks and offers.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// Versions accepted in `MCP-Protocol-Version` and in `initialize` (newest first). The older
/// two use the same Streamable HTTP transport and read our answers unchanged.
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION, "2025-06-18", "2025-03-26"];
/// The protocol-version request header.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

pub use crate::config::McpSettings;

/// Checks the headers read before the body: Origin and Host (403; `authority` is the request
/// URI's, which HTTP/2 sends instead of `Host`), Content-Type (415), Accept (406).
pub fn check_headers(
    settings: &McpSettings,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), Refusal> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|origin| settings.allows_origin(origin));
        if !allowed {
            return Err(refusal(
                StatusCode::FORBIDDEN,
                "forbidden: the Origin is not allowed to call this endpoint",
            ));
        }
    }
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .or(authority)
        .unwrap_or_default();
    if !settings.allows_host(host) {
        return Err(refusal(
            StatusCode::FORBIDDEN,
            "forbidden: the Host is not served by this endpoint",
        ));
    }
    if !is_json(headers) {
        return Err(refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported media type: the Content-Type must be application/json",
        ));
    }
    if let Some(accept) = headers.get(header::ACCEPT)
        && !accepts_json(accept.to_str().unwrap_or_default())
    {
        return Err(refusal(
            StatusCode::NOT_ACCEPTABLE,
            "not acceptable: this endpoint answers application/json only",
        ));
    }
    Ok(())
}

/// True when an `Accept` value admits `application/json`.
fn accepts_json(accept: &str) -> bool {
    accept.split(',').any(|range| {
        let essence = range.split(';').next().unwrap_or_default().trim();
        ["application/json", "application/*", "*/*"]
            .iter()
            .any(|admitted| essence.eq_ignore_ascii_case(admitted))
    })
}

/// Checks `MCP-Protocol-Version` on a message other than `initialize`: absent is accepted (the
/// specification has servers assume an older version, which we serve alike); an unsupported
/// value is 400.
pub fn check_protocol_version(value: Option<&HeaderValue>) -> Result<(), Refusal> {
    let Some(value) = value else {
        return Ok(());
    };
    let supported = value
        .to_str()
        .is_ok_and(|version| SUPPORTED_VERSIONS.contains(&version.trim()));
    if supported {
        return Ok(());
    }
    Err(Refusal::bad_request(
        Value::Null,
        INVALID_REQUEST,
        format!(
            "bad request: unsupported MCP-Protocol-Version; supported: {}",
            SUPPORTED_VERSIONS.join(", ")
        ),
    ))
}

/// The version `initialize` answers for a client's `requested` one: the same when supported,
/// else ours (the client then decides whether it can go on).
pub fn negotiate(requested: &str) -> &'static str {
    SUPPORTED_VERSIONS
        .iter()
        .find(|version| **version == requested)
        .copied()
        .unwrap_or(PROTOCOL_VERSION)
}

fn refusal(status: StatusCode, message: &str) -> Refusal {
    Refusal {
        status,
        id: Value::Null,
        code: INVALID_REQUEST,
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        for (name, value) in pairs {
            headers.insert(*name, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn loopback_origins_pass_by_default_and_other_origins_are_forbidden() {
        let settings = McpSettings::default();
        assert!(settings.allows_origin("http://localhost:6274"));
        assert!(settings.allows_origin("http://127.0.0.1"));
        assert!(settings.allows_origin("HTTP://[::1]:8080"));
        assert!(!settings.allows_origin("http://localhost.evil.example"));
        assert!(!settings.allows_origin("http://localhost:80x"));
        assert!(!settings.allows_origin("https://evil.example"));
        assert!(!settings.allows_origin("null"));
        let refused =
            check_headers(&settings, &headers(&[("origin", "https://evil.example")]), None).unwrap_err();
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(check_headers(&settings, &headers(&[]), None).is_ok());
        let any = McpSettings {
            allowed_origins: vec!["*".into()],
            allowed_hosts: vec!["lab.example.com".into(), "[::1]".into()],
        };
        assert!(any.allows_origin("https://evil.example"));
        assert!(any.allows_host("lab.example.com:443"));
        assert!(any.allows_host("[::1]:8080"));
        assert!(!any.allows_host("evil.example"));
        let refused = check_headers(&any, &headers(&[("host", "evil.example:8080")]), None).unwrap_err();
        let mut no_host = headers(&[]);
        no_host.remove(header::HOST);
        assert!(check_headers(&any, &no_host, Some("lab.example.com")).is_ok());
        assert!(check_headers(&any, &no_host, None).is_err());
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
    }

    #[test]
    fn media_types_and_protocol_versions_are_checked() {
        let settings = McpSettings::default();
        let mut text = headers(&[]);
        text.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert_eq!(
            check_headers(&settings, &text, None).unwrap_err().status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        let sse_only = headers(&[("accept", "text/event-stream")]);
        assert_eq!(
            check_headers(&settings, &sse_only, None).unwrap_err().status,
            StatusCode::NOT_ACCEPTABLE
        );
        assert!(
            check_headers(
                &settings,
                &headers(&[("accept", "application/json, text/event-stream")]),
                None
            )
            .is_ok()
        );
        let version = |headers: &HeaderMap| check_protocol_version(headers.get(PROTOCOL_VERSION_HEADER));
        assert!(version(&headers(&[])).is_ok());
        assert!(version(&headers(&[("mcp-protocol-version", "2025-11-25")])).is_ok());
        let refused = version(&headers(&[("mcp-protocol-version", "2024-01-01")])).unwrap_err();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert_eq!(negotiate("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate("2026-07-28"), PROTOCOL_VERSION);
    }
}
