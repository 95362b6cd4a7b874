//! Tracing setup: a log layer filtered by `RUST_LOG`, and an OpenTelemetry layer whose spans are
//! exported over OTLP/gRPC when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. The W3C trace-context
//! propagator is always installed, so trace ids flow through gRPC metadata and event envelopes
//! even when nothing is exported.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub mod semconv;

/// Whether this process exports spans (an OTLP endpoint is configured).
static EXPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// True when spans are exported (the OpenTelemetry layer is installed): work done only for
/// traces (spans per relayed event, say) is skipped otherwise, and trace context is passed on
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

/// Flushes exported spans when dropped.
pub struct TelemetryGuard {
    provider: SdkTracerProvider,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        let _ = self.provider.shutdown();
    }
}

/// Installs the global subscriber and propagator for a process named `service_name`.
/// Safe to call more than once (later calls only return a guard).
pub fn init(service_name: &str) -> TelemetryGuard {
    install(service_name, false)
}

/// Like [`init`], but logs go through the test harness's capture (shown only for failing
/// tests) and default to warnings.
pub fn init_for_tests(service_name: &str) -> TelemetryGuard {
    install(service_name, true)
}

fn install(service_name: &str, for_tests: bool) -> TelemetryGuard {
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    // The SDK's detectors read OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; the process's own
    // name applies only when the operator named none (the sampler reads OTEL_TRACES_SAMPLER and
    // OTEL_TRACES_SAMPLER_ARG by itself).
    let resource = opentelemetry_sdk::Resource::builder();
    let resource = match own_service_name(
        service_name,
        crate::config::env_var("OTEL_SERVICE_NAME").as_deref(),
        crate::config::env_var("OTEL_RESOURCE_ATTRIBUTES").as_deref(),
    ) {
        Some(name) => resource.with_service_name(name.to_owned()),
        None => resource,
    }
    .build();
    let mut builder = SdkTracerProvider::builder().with_resource(resource);
    let disabled = sdk_disabled(crate::config::env_var("OTEL_SDK_DISABLED").as_deref());
    PASSING.store(!disabled, std::sync::atomic::Ordering::Relaxed);
    if let Some(endpoint) = crate::config::env_var("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|_| !disabled) {
        match opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint.clone())
            .build()
        {
            Ok(exporter) => {
                builder = builder.with_span_processor(batch_processor(exporter));
                EXPORTING.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Err(error) => eprintln!("OTLP exporter to {endpoint} not started: {error}"),
        }
    }
    let provider = builder.build();
    let tracer = provider.tracer(service_name.to_owned());
    opentelemetry::global::set_tracer_provider(provider.clone());

    let default_filter = if for_tests {
        "warn"
    } else {
        "info,sqlx=warn,h2=warn,tower=warn,hyper=warn,tonic=warn"
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let fmt = tracing_subscriber::fmt::layer().with_target(false).compact();
    let fmt = if for_tests {
        fmt.with_test_writer().boxed()
    } else {
        fmt.boxed()
    };
    // Only spans at info level and above become trace spans: ours, not the libraries' internals.
    // Without source locations, thread names and busy/idle times on every span: they cost per
    // span and the span names and attributes already say where the work was.
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    // The OpenTelemetry layer exists only while spans are exported: without an exporter no trace
    // span is made at all, and the W3C context a request arrived with (or the gateway started)
    // is passed on as it is ([`passed_on`]); `OTEL_SDK_DISABLED=true` does neither.
    let otel = exporting().then_some(otel);
    let _ = tracing_subscriber::registry()
        .with(otel)
        .with(fmt.with_filter(filter))
        .try_init();
    TelemetryGuard { provider }
}

/// The batch span processor: the `OTEL_BSP_*` variables where set; otherwise batches of 2,048
/// spans from a queue of 8,192 instead of the SDK's 512 and 2,048 (measured in
/// docs/performance.md, "Tracing": larger batches cost less per span to export, and a busy
/// process fills 512 in a few milliseconds).
fn batch_processor(
    exporter: opentelemetry_otlp::SpanExporter,
) -> opentelemetry_sdk::trace::BatchSpanProcessor {
    let mut config = opentelemetry_sdk::trace::BatchConfigBuilder::default();
    if crate::config::env_var("OTEL_BSP_MAX_QUEUE_SIZE").is_none() {
        config = config.with_max_queue_size(8192);
    }
    if crate::config::env_var("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").is_none() {
        config = config.with_max_export_batch_size(2048);
    }
    opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter)
        .with_batch_config(config.build())
        .build()
}

/// True when `OTEL_SDK_DISABLED` says `true` (any case), as the OpenTelemetry specification
/// reads it.
fn sdk_disabled(value: Option<&str>) -> bool {
    value.is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
}

/// The service name this process sets on its resource: `service_name`, unless the standard
/// variables name one (`OTEL_SERVICE_NAME`, or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`).
fn own_service_name<'a>(
    service_name: &'a str,
    otel_service_name: Option<&str>,
    resource_attributes: Option<&str>,
) -> Option<&'a str> {
    let named_by_env = otel_service_name.is_some_and(|name| !name.trim().is_empty());
    let named_in_attributes = resource_attributes.is_some_and(|attributes| {
        attributes.split(',').any(|pair| {
            pair.split_once('=')
                .is_some_and(|(key, _)| key.trim() == "service.name")
        })
    });
    (!named_by_env && !named_in_attributes).then_some(service_name)
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
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    };
    match header("traceparent") {
        valid if is_valid_traceparent(valid) => (valid.to_owned(), header("tracestate").to_owned()),
        _ => (new_traceparent(), String::new()),
    }
}

/// A new sampled root `traceparent` (random trace and span ids).
pub fn new_traceparent() -> String {
    let trace: u128 = rand::random::<u128>().max(1);
    let span: u64 = rand::random::<u64>().max(1);
    format!("00-{trace:032x}-{span:016x}-01")
}

/// Returns the W3C `traceparent` and `tracestate` to pass on from here: the current span's
/// while spans are exported, else the context the work arrived with ([`passed_on`]); empty
/// when none.
pub fn current_trace_context() -> (String, String) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if !exporting() {
        return PASSED
            .try_with(|passed| (passed.traceparent.clone(), passed.tracestate.clone()))
            .unwrap_or_default();
    }
    let context = tracing::Span::current().context();
    let mut carrier = std::collections::HashMap::new();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut carrier)
    });
    (
        carrier.remove("traceparent").unwrap_or_default(),
        carrier.remove("tracestate").unwrap_or_default(),
    )
}

/// Sets an attribute on the current span's trace span (for values known only once the work is
/// done, such as the number of an order just placed). Nothing happens without a current span.
pub fn annotate(key: &'static str, value: impl Into<opentelemetry::Value>) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    tracing::Span::current().set_attribute(key, value);
}

/// Renames `span`'s trace span (the `otel.name` field is read only while a span has not
/// started, and continuing a caller's trace starts it).
pub fn rename(span: &tracing::Span, name: String) {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    span.context().span().update_name(name);
}

/// Makes `span` a child of the trace named by a stored `traceparent`/`tracestate` pair.
pub fn continue_trace(span: &tracing::Span, traceparent: &str, tracestate: &str) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if traceparent.is_empty() {
        return;
    }
    let mut carrier = std::collections::HashMap::new();
    carrier.insert("traceparent".to_owned(), traceparent.to_owned());
    if !tracestate.is_empty() {
        carrier.insert("tracestate".to_owned(), tracestate.to_owned());
    }
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&carrier));
    let _ = span.set_parent(parent);
}

#[cfg(test)]
mod tests {
    use super::{is_valid_traceparent, new_traceparent, own_service_name, sdk_disabled};

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

    #[test]
    fn the_process_names_its_service_unless_the_standard_variables_name_one() {
        assert_eq!(own_service_name("orders-svc", None, None), Some("orders-svc"));
        assert_eq!(
            own_service_name("orders-svc", Some(""), Some("deployment.environment=dev")),
            Some("orders-svc")
        );
        assert_eq!(own_service_name("orders-svc", Some("orders-eu"), None), None);
        assert_eq!(
            own_service_name("orders-svc", None, Some("team=lab, service.name=orders-eu")),
            None
        );
    }
}
