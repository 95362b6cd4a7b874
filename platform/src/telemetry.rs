//! Tracing setup: a log layer filtered by `RUST_LOG`, and, when `OTEL_EXPORTER_OTLP_ENDPOINT`
//! is set, the trace span layer ([`spans`]) whose spans are exported over OTLP/gRPC
//! ([`otlp`]). Without an exporter no trace span is made and the W3C trace context a unit of
//! work arrived with is passed on unchanged ([`passed_on`]), so trace ids still flow through
//! gRPC metadata, event envelopes and webhooks.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub mod otlp;
pub mod semconv;
pub mod spans;

pub use otlp::AttributeValue;
pub use spans::{Sampler, SpanContext};

/// Whether this process exports spans (an OTLP endpoint is configured).
static EXPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True when spans are exported (the span layer is installed): work done only for traces
/// (spans per relayed event, say) is skipped otherwise, and trace context is passed on
/// unchanged instead ([`passed_on`]).
pub fn exporting() -> bool {
    EXPORTING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether trace context is passed on while spans are not exported (off with
/// `OTEL_SDK_DISABLED=true`).
static PASSING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// True unless `OTEL_SDK_DISABLED=true`: work that arrives without a span passes the W3C
/// context it came with on ([`passed_on`]); the gateway and gRPC servers start one when none
/// came.
pub fn passing() -> bool {
    PASSING.load(std::sync::atomic::Ordering::Relaxed)
}

/// True when work passes on the context it arrived with ([`passed_on`]): spans are not
/// exported and `OTEL_SDK_DISABLED` is not `true`.
pub fn passes_context() -> bool {
    !exporting() && passing()
}

/// The sampler of this process's spans (`OTEL_TRACES_SAMPLER`), read when spans continue a
/// remote trace.
static SAMPLER: std::sync::OnceLock<Sampler> = std::sync::OnceLock::new();

fn sampler() -> Sampler {
    SAMPLER
        .get()
        .copied()
        .unwrap_or_else(|| Sampler::from_env(None, None))
}

/// The export thread of this process, once started.
static EXPORTER: std::sync::OnceLock<otlp::Exporter> = std::sync::OnceLock::new();

/// Sends the spans still queued when dropped (at the end of `main`).
pub struct TelemetryGuard {
    flushes: bool,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if self.flushes
            && let Some(exporter) = EXPORTER.get()
        {
            exporter.shutdown();
        }
    }
}

/// Installs the global subscriber for a process named `service_name`. Safe to call more than
/// once (later calls only return a guard that does nothing).
pub fn init(service_name: &str) -> TelemetryGuard {
    install(service_name, false)
}

/// Like [`init`], but logs go through the test harness's capture (shown only for failing
/// tests) and default to warnings.
pub fn init_for_tests(service_name: &str) -> TelemetryGuard {
    install(service_name, true)
}

fn install(service_name: &str, for_tests: bool) -> TelemetryGuard {
    let disabled = sdk_disabled(crate::config::env_var("OTEL_SDK_DISABLED").as_deref());
    let settings = otlp::Settings::from_env(service_name, crate::config::env_var).filter(|_| !disabled);
    let warnings = settings
        .as_ref()
        .map(|settings| settings.warnings.clone())
        .unwrap_or_default();
    // The collector's endpoint and TLS files are checked before any span is made: unusable
    // ones leave the process as without an endpoint (context passed on, no span), with an
    // error naming the variable once the log is up.
    let mut refused = None;
    let exported = settings.and_then(|settings| match settings.connection() {
        Ok(connection) => Some((settings, connection)),
        Err(error) => {
            refused = Some(error);
            None
        }
    });
    let default_filter = if for_tests {
        "warn"
    } else {
        "info,sqlx=warn,h2=warn,tower=warn,hyper=warn,tonic=warn"
    };
    let log_filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let filter = log_filter();
    let fmt = tracing_subscriber::fmt::layer().with_target(false).compact();
    let fmt = if for_tests {
        fmt.with_test_writer().boxed()
    } else {
        fmt.boxed()
    };
    // The span layer exists only while spans are exported: without an exporter no trace span is
    // made at all, and the W3C context a request arrived with (or the gateway started) is
    // passed on as it is ([`passed_on`]); `OTEL_SDK_DISABLED=true` does neither. Only spans at
    // info level and above become trace spans (ours, not the libraries' internals), and only
    // warnings and errors become span events.
    let mut queue = None;
    let spans = exported.as_ref().map(|(settings, _)| {
        let sampler = Sampler::from_env(
            crate::config::env_var("OTEL_TRACES_SAMPLER").as_deref(),
            crate::config::env_var("OTEL_TRACES_SAMPLER_ARG").as_deref(),
        );
        let shared = std::sync::Arc::new(otlp::Queue::new(settings.batch_size, settings.max_queued));
        queue = Some((std::sync::Arc::clone(&shared), sampler));
        spans::SpanLayer::new(sampler, shared).with_logs(log_filter())
    });
    let installed = tracing_subscriber::registry()
        .with(spans)
        .with(fmt.with_filter(filter))
        .try_init()
        .is_ok();
    if !installed {
        return TelemetryGuard { flushes: false };
    }
    PASSING.store(!disabled, std::sync::atomic::Ordering::Relaxed);
    for warning in warnings {
        tracing::warn!("OTLP trace export: {warning}");
    }
    if let Some(error) = refused {
        tracing::error!("OTLP trace export disabled, no span is exported: {error}");
    }
    let (Some((settings, connection)), Some((queue, sampler))) = (exported, queue) else {
        return TelemetryGuard { flushes: false };
    };
    let _ = SAMPLER.set(sampler);
    let endpoint = settings.endpoint.clone();
    match otlp::Exporter::start(settings, connection, queue, service_name) {
        Ok(exporter) => {
            let _ = EXPORTER.set(exporter);
            EXPORTING.store(true, std::sync::atomic::Ordering::Relaxed);
            TelemetryGuard { flushes: true }
        }
        Err(error) => {
            eprintln!("OTLP exporter to {endpoint} not started: {error}");
            TelemetryGuard { flushes: false }
        }
    }
}

/// True when `OTEL_SDK_DISABLED` says `true` (any case), as the OpenTelemetry specification
/// reads it.
fn sdk_disabled(value: Option<&str>) -> bool {
    value.is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
}

/// The W3C trace context a unit of work passes on while spans are not exported: the
/// `traceparent` and `tracestate` it arrived with (an HTTP or gRPC request, an event), which its
/// calls, events and webhooks carry unchanged. Without an exporter this costs a header copy per
/// hop instead of a span per hop, and one trace id still ties an API call to its events and
/// webhook deliveries.
#[derive(Clone, Debug, Default)]
pub struct PassedContext {
    pub traceparent: String,
    pub tracestate: String,
}

tokio::task_local! {
    static PASSED: PassedContext;
}

/// Runs `work` passing on `traceparent`/`tracestate` (see [`PassedContext`]); while spans are
/// exported the context comes from the current span instead and this only runs `work`.
pub fn passed_on<F: std::future::Future>(
    traceparent: String,
    tracestate: String,
    work: F,
) -> tokio::task::futures::TaskLocalFuture<PassedContext, F> {
    PASSED.scope(
        PassedContext {
            traceparent,
            tracestate,
        },
        work,
    )
}

/// True when `value` is a W3C `traceparent` of version 00 (`00-<32 hex>-<16 hex>-<2 hex>`, ids
/// not all zero).
pub fn is_valid_traceparent(value: &str) -> bool {
    let bytes = value.as_bytes();
    let hex = |range: std::ops::Range<usize>| {
        bytes[range.clone()]
            .iter()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
            && bytes[range].iter().any(|byte| *byte != b'0')
    };
    bytes.len() == 55
        && bytes.starts_with(b"00-")
        && bytes[35] == b'-'
        && bytes[52] == b'-'
        && hex(3..35)
        && hex(36..52)
        && bytes[53..]
            .iter()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// The context to pass on for work that arrived with `headers` (HTTP or gRPC): its
/// `traceparent` and `tracestate` when the `traceparent` is valid, else a new root.
pub fn incoming_context(headers: &http::HeaderMap) -> (String, String) {
    let header = |name| header_text(headers, name);
    match header("traceparent") {
        valid if is_valid_traceparent(valid) => (valid.to_owned(), header("tracestate").to_owned()),
        _ => (new_traceparent(), String::new()),
    }
}

/// A new sampled root `traceparent` (random trace and span ids).
pub fn new_traceparent() -> String {
    SpanContext::new_root(&Sampler::from_env(Some("always_on"), None)).traceparent()
}

/// Returns the W3C `traceparent` and `tracestate` to pass on from here: the current span's
/// while spans are exported, else the context the work arrived with ([`passed_on`]); empty
/// when none.
pub fn current_trace_context() -> (String, String) {
    if !exporting() {
        return PASSED
            .try_with(|passed| (passed.traceparent.clone(), passed.tracestate.clone()))
            .unwrap_or_default();
    }
    trace_context_of(&tracing::Span::current()).unwrap_or_default()
}

/// The `traceparent` and `tracestate` naming `span` (`None` when it is not a trace span).
pub fn trace_context_of(span: &tracing::Span) -> Option<(String, String)> {
    spans::with_nearest_recording(span, |recording| {
        (recording.context.traceparent(), recording.tracestate.clone())
    })
}

/// Sets an attribute on the current span's trace span (for values known only once the work is
/// done, such as the number of an order just placed). Nothing happens without a current span.
pub fn annotate(key: &'static str, value: impl Into<opentelemetry::Value>) {
    let value = AttributeValue::from(value.into());
    spans::with_nearest_recording(&tracing::Span::current(), |recording| {
        if recording.context.sampled {
            recording.set(key, value.as_ref());
        }
    });
}

/// Renames `span`'s trace span (its conventional name, once known).
pub fn rename(span: &tracing::Span, name: String) {
    spans::with_recording(span, |recording| {
        recording.name = std::borrow::Cow::Owned(name);
    });
}

/// Makes `span` a child of the trace named by a stored `traceparent`/`tracestate` pair (an
/// invalid or empty `traceparent` leaves it as it is: a root of its own).
pub fn continue_trace(span: &tracing::Span, traceparent: &str, tracestate: &str) {
    let Some(remote) = SpanContext::parse(traceparent) else {
        return;
    };
    spans::with_recording(span, |recording| {
        recording.continue_remote(remote, tracestate, &sampler());
    });
}

/// Makes `span` a child of the trace an HTTP or gRPC request's `traceparent` header names.
pub fn continue_from_headers(span: &tracing::Span, headers: &http::HeaderMap) {
    continue_trace(
        span,
        header_text(headers, "traceparent"),
        header_text(headers, "tracestate"),
    );
}

/// Header `name` as text (empty when absent or not visible ASCII).
fn header_text<'a>(headers: &'a http::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{is_valid_traceparent, new_traceparent, sdk_disabled};

    #[test]
    fn only_a_version_00_traceparent_with_nonzero_ids_is_passed_on() {
        assert!(is_valid_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        assert!(!is_valid_traceparent(
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01"
        ));
        assert!(!is_valid_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"
        ));
        assert!(!is_valid_traceparent(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        assert!(!is_valid_traceparent(
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"
        ));
        assert!(!is_valid_traceparent("00-4bf92f35-00f067aa0ba902b7-01"));
        assert!(!is_valid_traceparent(""));
        let fresh = new_traceparent();
        assert!(is_valid_traceparent(&fresh), "{fresh}");
        assert_ne!(fresh, new_traceparent());
    }

    #[test]
    fn only_otel_sdk_disabled_true_disables_the_trace_layer() {
        assert!(sdk_disabled(Some("true")));
        assert!(sdk_disabled(Some(" TRUE ")));
        assert!(!sdk_disabled(Some("false")));
        assert!(!sdk_disabled(Some("1")));
        assert!(!sdk_disabled(None));
    }
}
