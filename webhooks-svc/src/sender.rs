//! The HTTP side of one attempt: a reqwest client (rustls with the public web roots plus any
//! configured extra roots, no proxy, no redirects, `https` only, names resolved only through the
//! SSRF guard), the request headers, and the classification of what came back.

use crate::ssrf::{AddressGuard, GuardError, RefusedAddress, UrlHost, WebhookUrl};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `User-Agent` of every delivery.
pub const USER_AGENT: &str = "lab-webhooks/1";
/// At most this much of a response body is read (then the connection is dropped).
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// What one request carries besides the body.
#[derive(Clone, Debug)]
pub struct Outgoing<'a> {
    pub url: &'a str,
    pub body: &'a [u8],
    pub event_id: String,
    pub delivery_id: String,
    pub event_type: &'a str,
    pub signature: String,
    pub traceparent: String,
    pub tracestate: String,
}

/// What came back from one attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub attempted_at: DateTime<Utc>,
    /// HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// From the start of the request to the response headers (or the failure).
    pub latency_ms: i64,
    pub error: Option<String>,
    /// The raw `Retry-After` header of the response.
    pub retry_after: Option<String>,
}

/// Sends deliveries.
#[derive(Clone, Debug)]
pub struct Sender {
    client: reqwest::Client,
    guard: AddressGuard,
    timeout: Duration,
}

impl Sender {
    /// Builds the client; `extra_roots_pem` are PEM bundles trusted besides the web roots.
    pub fn new(guard: AddressGuard, timeout: Duration, extra_roots_pem: &[String]) -> anyhow::Result<Self> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .https_only(true)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(guard.clone()))
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(USER_AGENT)
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(256);
        for bundle in extra_roots_pem {
            for certificate in reqwest::Certificate::from_pem_bundle(bundle.as_bytes())? {
                builder = builder.add_root_certificate(certificate);
            }
        }
        Ok(Self {
            client: builder.build()?,
            guard,
            timeout,
        })
    }

    /// Makes one attempt. A literal address is checked here; names are checked (and pinned) by
    /// the guard when the client connects.
    pub async fn send(&self, outgoing: Outgoing<'_>) -> Response {
        let attempted_at = platform::time::now();
        let started = Instant::now();
        let failed = |error: String| Response {
            attempted_at,
            status: None,
            latency_ms: elapsed_ms(started),
            error: Some(error),
            retry_after: None,
        };
        let url = match WebhookUrl::parse(outgoing.url) {
            Ok(url) => url,
            Err(error) => return failed(format!("invalid url: {error}")),
        };
        if let UrlHost::Ip(address) = url.host()
            && let Err(refused) = self.guard.check_literal(*address)
        {
            tracing::warn!(%refused, "webhook attempt refused by the address guard");
            return failed(refused.to_string());
        }
        let mut request = self
            .client
            .post(url.url().clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("x-svc-event-id", outgoing.event_id)
            .header("x-svc-delivery-id", outgoing.delivery_id)
            .header("x-svc-event-type", outgoing.event_type)
            .header("x-svc-signature", outgoing.signature)
            .body(outgoing.body.to_vec());
        if !outgoing.traceparent.is_empty() {
            request = request.header("traceparent", outgoing.traceparent);
            if !outgoing.tracestate.is_empty() {
                request = request.header("tracestate", outgoing.tracestate);
            }
        }
        match request.send().await {
            Ok(mut response) => {
                let latency_ms = elapsed_ms(started);
                let status = response.status().as_u16();
                let retry_after = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned);
                // Read a bounded body so the connection can be reused.
                let mut read = 0;
                while let Ok(Some(chunk)) = response.chunk().await {
                    read += chunk.len();
                    if read > MAX_RESPONSE_BYTES {
                        break;
                    }
                }
                let error = (!(200..300).contains(&status)).then(|| format!("unexpected status {status}"));
                Response {
                    attempted_at,
                    status: Some(status),
                    latency_ms,
                    error,
                    retry_after,
                }
            }
            Err(error) => failed(self.describe(&error)),
        }
    }

    fn describe(&self, error: &reqwest::Error) -> String {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(current) = source {
            if let Some(refused) = current.downcast_ref::<RefusedAddress>() {
                return refused.to_string();
            }
            if let Some(guard) = current.downcast_ref::<GuardError>() {
                return guard.to_string();
            }
            source = current.source();
        }
        if error.is_timeout() {
            return format!("timed out after {} ms", self.timeout.as_millis());
        }
        let chain = error_chain(error);
        if error.is_connect() {
            format!("connection failed: {chain}")
        } else {
            format!("request failed: {chain}")
        }
    }
}

fn elapsed_ms(started: Instant) -> i64 {
    i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)
}

/// The messages of the sources of a client error (not the error itself, which repeats the
/// URL, nor hyper's generic wrappers), innermost last, without repeats.
fn error_chain(error: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(current) = source {
        let mut text = current.to_string();
        // rustls appends a link to its manual; the message says enough.
        if let Some(link) = text.find(": https://docs.rs/") {
            text.truncate(link);
        }
        if !text.starts_with("client error") && !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        source = current.source();
    }
    if parts.is_empty() {
        // The error's own text without the URL (which may carry a customer's token).
        let mut bare = String::new();
        let mut text = error.to_string();
        if let Some(url) = error.url() {
            text = text.replace(url.as_str(), "<url>");
        }
        bare.push_str(&text);
        parts.push(bare);
    }
    parts.join(": ")
}
