//! The trace span layer: every `tracing` span at info level or above becomes an OpenTelemetry
//! span, recorded in the span's own extensions and, when it closes and is sampled, written as
//! OTLP protobuf into the export queue ([`super::otlp`]).
//!
//! It replaces the `tracing-opentelemetry` bridge and the SDK's span pipeline on the hot path:
//! there a span went through a span builder, an SDK span, its `SpanData`, a channel to the batch
//! thread and a conversion into protocol structs, with the key and value of every attribute
//! copied along the way (measured in docs/performance.md, "Tracing": about 12 µs per span on
//! the order read). Here a span is one small record (ids, name, kind, status, times, its
//! attributes as `(&'static str, value)` pairs) encoded once, on close, straight into the bytes
//! the exporter sends.
//!
//! What a span carries:
//! * the `otel.name`, `otel.kind` (`server`, `client`, `producer`, `consumer`, else internal),
//!   `otel.status_code` (`error`, `ok`) and `otel.status_message` fields set its name, kind and
//!   status, as with the bridge; every other field is an attribute;
//! * its parent: the explicit parent, else the current span, else a remote parent set by
//!   [`continue_trace`] (a W3C `traceparent`), else none (a new trace);
//! * warnings and errors logged inside it, as span events.
//!
//! Sampling follows `OTEL_TRACES_SAMPLER` ([`Sampler`]); a span that is not sampled still has
//! ids (its `traceparent` says "not sampled" to the next hop) but records no attributes and is
//! never encoded.

use super::otlp::{
    self, AttributeValue, LEN, ValueRef, bytes_field, bytes_field_len, fixed64_field, key, key_value, varint,
    varint_field,
};
use std::borrow::Cow;
use std::sync::Arc;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The W3C identity of a span: what a `traceparent` carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: u128,
    pub span_id: u64,
    pub sampled: bool,
}

impl SpanContext {
    /// The `traceparent` header value naming this span.
    pub fn traceparent(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; 55];
        text[..3].copy_from_slice(b"00-");
        for (index, slot) in text[3..35].iter_mut().enumerate() {
            *slot = HEX[((self.trace_id >> (124 - 4 * index)) & 0xf) as usize];
        }
        text[35] = b'-';
        for (index, slot) in text[36..52].iter_mut().enumerate() {
            *slot = HEX[((self.span_id >> (60 - 4 * index)) & 0xf) as usize];
        }
        text[52..].copy_from_slice(if self.sampled { b"-01" } else { b"-00" });
        String::from_utf8_lossy(&text).into_owned()
    }

    /// A new root: random trace and span ids (never zero), sampled as `sampler` says.
    pub fn new_root(sampler: &Sampler) -> Self {
        let trace_id = rand::random::<u128>().max(1);
        Self {
            trace_id,
            span_id: random_u64(),
            sampled: sampler.sampled(trace_id, None),
        }
    }

    /// Reads a version-00 `traceparent` (`None` when it is not a valid one).
    pub fn parse(traceparent: &str) -> Option<Self> {
        if !super::is_valid_traceparent(traceparent) {
            return None;
        }
        let trace_id = u128::from_str_radix(&traceparent[3..35], 16).ok()?;
        let span_id = u64::from_str_radix(&traceparent[36..52], 16).ok()?;
        let flags = u8::from_str_radix(&traceparent[53..55], 16).ok()?;
        Some(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }
}

/// `OTEL_TRACES_SAMPLER` with `OTEL_TRACES_SAMPLER_ARG`: which new traces are recorded, and
/// whether a remote parent's decision is followed (`parentbased_*`, the default
/// `parentbased_always_on`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampler {
    /// Follow the parent's sampled flag when there is a parent.
    pub parent_based: bool,
    /// The share of new traces recorded (1 for always_on, 0 for always_off).
    pub ratio: f64,
}

impl Sampler {
    /// The sampler the standard variables name; unknown names fall back to the default, as the
    /// specification asks.
    pub fn from_env(name: Option<&str>, argument: Option<&str>) -> Self {
        let ratio = argument
            .and_then(|argument| argument.trim().parse::<f64>().ok())
            .filter(|ratio| (0.0..=1.0).contains(ratio))
            .unwrap_or(1.0);
        let (parent_based, ratio) = match name.map(str::trim).unwrap_or_default() {
            "always_on" => (false, 1.0),
            "always_off" => (false, 0.0),
            "traceidratio" => (false, ratio),
            "parentbased_always_off" => (true, 0.0),
            "parentbased_traceidratio" => (true, ratio),
            _ => (true, 1.0),
        };
        Self { parent_based, ratio }
    }

    /// Whether a span of `trace_id` is recorded, given its parent's flag (`None`: a root).
    pub fn sampled(&self, trace_id: u128, parent_sampled: Option<bool>) -> bool {
        match parent_sampled {
            Some(sampled) if self.parent_based => sampled,
            _ => self.ratio_allows(trace_id),
        }
    }

    /// The trace-id ratio rule of the OpenTelemetry SDKs: the lower 64 bits of the trace id,
    /// shifted right once, below `ratio` × 2⁶³.
    fn ratio_allows(&self, trace_id: u128) -> bool {
        if self.ratio >= 1.0 {
            return true;
        }
        let bound = (self.ratio.max(0.0) * (1u64 << 63) as f64) as u64;
        ((trace_id as u64) >> 1) < bound
    }
}

/// A span's kind in the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Kind {
    Internal = 1,
    Server = 2,
    Client = 3,
    Producer = 4,
    Consumer = 5,
}

/// One span being recorded (kept in the tracing span's extensions).
pub struct Recording {
    pub context: SpanContext,
    /// 0 for a root span.
    pub parent_span_id: u64,
    pub tracestate: String,
    pub name: Cow<'static, str>,
    pub kind: Kind,
    /// 0 unset, 1 ok, 2 error (the protocol's codes).
    pub status: i32,
    pub status_message: String,
    pub start_unix_nanos: u64,
    /// When the span closed (its last handle dropped: an instrumented future's span closes when
    /// the future is done); 0 until then.
    pub end_unix_nanos: u64,
    pub attributes: otlp::Attributes,
    pub events: Vec<SpanEvent>,
}

/// A warning or error logged inside a span.
pub struct SpanEvent {
    pub unix_nanos: u64,
    pub name: String,
    pub attributes: Vec<(&'static str, AttributeValue)>,
}

impl Recording {
    /// Sets attribute `key` (an existing value is replaced).
    pub fn set(&mut self, key: &str, value: ValueRef<'_>) {
        self.attributes.set(key, value);
    }

    /// Makes this span a child of a remote span (a `traceparent` received or stored), keeping
    /// its own span id; sampling follows the remote flag as the sampler says.
    pub fn continue_remote(&mut self, remote: SpanContext, tracestate: &str, sampler: &Sampler) {
        self.context.trace_id = remote.trace_id;
        self.context.sampled = sampler.sampled(remote.trace_id, Some(remote.sampled));
        self.parent_span_id = remote.span_id;
        tracestate.clone_into(&mut self.tracestate);
    }
}

/// Nanoseconds since the Unix epoch.
pub fn unix_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64)
}

/// A new non-zero random id.
fn random_u64() -> u64 {
    rand::random::<u64>().max(1)
}

/// The layer. `queue` receives the encoded spans.
///
/// It filters on its own instead of through a per-layer filter (`Layer::with_filter`): a
/// per-layer filter looks the span up in the registry on every enter, exit, record and close to
/// see whether it is enabled for its layer, which was about a quarter of the layer's cost.
/// Its interest is spans at info level and above and events at warn level and above, joined
/// with the log layer's (`logs`, the same directives as the log layer's own filter), so that a
/// callsite either of them wants stays enabled: spans below info that only the log layer wants
/// are seen here and skipped (their children are parented on the nearest recorded ancestor).
pub struct SpanLayer {
    sampler: Sampler,
    queue: Arc<otlp::Queue>,
    logs: Option<tracing_subscriber::EnvFilter>,
}

impl SpanLayer {
    pub fn new(sampler: Sampler, queue: Arc<otlp::Queue>) -> Self {
        Self {
            sampler,
            queue,
            logs: None,
        }
    }

    /// Keeps enabled what the log layer, filtered by `logs`, wants besides this layer's own.
    pub fn with_logs(mut self, logs: tracing_subscriber::EnvFilter) -> Self {
        self.logs = Some(logs);
        self
    }
}

/// Whether this layer records `metadata`: spans at info level and above (ours, not the
/// libraries' internals) and, as span events, warnings and errors.
fn recorded(metadata: &tracing::Metadata<'_>) -> bool {
    if metadata.is_span() {
        *metadata.level() <= tracing::Level::INFO
    } else {
        *metadata.level() <= tracing::Level::WARN
    }
}

/// Fills a span's name, kind, status and attributes from its fields: a new span's (`fresh`,
/// every field distinct) or later values (which replace earlier ones).
struct FieldVisitor<'a> {
    recording: &'a mut Recording,
    fresh: bool,
}

thread_local! {
    /// Where `Debug` and `Display` values are written before they are encoded.
    static FORMATTED: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

impl FieldVisitor<'_> {
    fn attribute(&mut self, field: &Field, value: ValueRef<'_>) {
        if self.fresh {
            self.recording.attributes.push(field.name(), value);
        } else {
            self.recording.attributes.set(field.name(), value);
        }
    }

    fn text(&mut self, field: &Field, value: &str) {
        let recording = &mut *self.recording;
        match field.name() {
            "otel.name" => recording.name = Cow::Owned(value.to_owned()),
            "otel.kind" => {
                recording.kind = match value {
                    "server" => Kind::Server,
                    "client" => Kind::Client,
                    "producer" => Kind::Producer,
                    "consumer" => Kind::Consumer,
                    _ => Kind::Internal,
                }
            }
            "otel.status_code" => {
                recording.status = if value.eq_ignore_ascii_case("error") {
                    2
                } else if value.eq_ignore_ascii_case("ok") {
                    1
                } else {
                    0
                }
            }
            "otel.status_message" => value.clone_into(&mut recording.status_message),
            _ => self.attribute(field, ValueRef::Text(value)),
        }
    }
}

impl Visit for FieldVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.text(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        FORMATTED.with(|formatted| match formatted.try_borrow_mut() {
            Ok(mut formatted) => {
                formatted.clear();
                let _ = write!(formatted, "{value:?}");
                self.text(field, &formatted);
            }
            // Formatting the value recorded a field of another span on this thread.
            Err(_) => self.text(field, &format!("{value:?}")),
        });
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.attribute(field, ValueRef::Int(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.attribute(field, ValueRef::Int(value as i64));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.attribute(field, ValueRef::Bool(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.attribute(field, ValueRef::Double(value));
    }
}

/// Collects an event's message and fields.
struct EventVisitor<'a>(&'a mut SpanEvent);

impl Visit for EventVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => value.clone_into(&mut self.0.name),
            name => self
                .0
                .attributes
                .push((name, AttributeValue::Text(value.to_owned()))),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.0.name = format!("{value:?}"),
            name => self
                .0
                .attributes
                .push((name, AttributeValue::Text(format!("{value:?}")))),
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.attributes.push((field.name(), AttributeValue::Int(value)));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0
            .attributes
            .push((field.name(), AttributeValue::Int(value as i64)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0
            .attributes
            .push((field.name(), AttributeValue::Bool(value)));
    }
}

impl<S> tracing_subscriber::Layer<S> for SpanLayer
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    fn register_callsite(
        &self,
        metadata: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if recorded(metadata) {
            return tracing::subscriber::Interest::always();
        }
        match &self.logs {
            Some(logs) => {
                <tracing_subscriber::EnvFilter as tracing_subscriber::layer::Filter<S>>::callsite_enabled(
                    logs, metadata,
                )
            }
            None => tracing::subscriber::Interest::never(),
        }
    }

    /// Info (this layer's spans), or more when the log layer wants more. Without a hint the
    /// global maximum level would be `TRACE`: every `trace!` and `debug!` of the libraries would
    /// get past the level check to its callsite's interest, and every `log` record of the
    /// libraries that use the `log` crate (turned into events by the log bridge, whose maximum
    /// follows this hint) would be built and dispatched before being dropped.
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        use tracing::level_filters::LevelFilter;
        match &self.logs {
            None => Some(LevelFilter::INFO),
            Some(logs) => {
                <tracing_subscriber::EnvFilter as tracing_subscriber::Layer<S>>::max_level_hint(logs)
                    .map(|logs| logs.max(LevelFilter::INFO))
            }
        }
    }

    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
        // A callsite the log layer may want is left to its own filter.
        recorded(metadata) || self.logs.is_some()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !recorded(attrs.metadata()) {
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let parent = if let Some(parent) = attrs.parent() {
            ctx.span(parent)
        } else if attrs.is_contextual() {
            ctx.lookup_current()
        } else {
            None
        };
        let inherited = parent.and_then(|parent| {
            parent.scope().find_map(|ancestor| {
                ancestor
                    .extensions()
                    .get::<Recording>()
                    .map(|recording| (recording.context, recording.tracestate.clone()))
            })
        });
        let (context, parent_span_id, tracestate) = match inherited {
            Some((parent, tracestate)) => (
                SpanContext {
                    trace_id: parent.trace_id,
                    span_id: random_u64(),
                    sampled: self.sampler.sampled(parent.trace_id, Some(parent.sampled)),
                },
                parent.span_id,
                tracestate,
            ),
            None => (SpanContext::new_root(&self.sampler), 0, String::new()),
        };
        let mut recording = Recording {
            context,
            parent_span_id,
            tracestate,
            name: Cow::Borrowed(attrs.metadata().name()),
            kind: Kind::Internal,
            status: 0,
            status_message: String::new(),
            start_unix_nanos: unix_nanos(),
            end_unix_nanos: 0,
            attributes: otlp::Attributes::with_capacity(attrs.fields().len()),
            events: Vec::new(),
        };
        // A root may be reparented right after it is made ([`continue_trace`]) and become
        // sampled, so its fields are always read; a child of a span that is not sampled is not
        // recorded at all.
        if recording.context.sampled || recording.parent_span_id == 0 {
            attrs.record(&mut FieldVisitor {
                recording: &mut recording,
                fresh: true,
            });
        }
        span.extensions_mut().insert(recording);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(recording) = span.extensions_mut().get_mut::<Recording>()
            && recording.context.sampled
        {
            values.record(&mut FieldVisitor {
                recording,
                fresh: false,
            });
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if !recorded(event.metadata()) {
            return;
        }
        let Some(span) = ctx.event_span(event) else {
            return;
        };
        let Some(span) = span
            .scope()
            .find(|ancestor| ancestor.extensions().get::<Recording>().is_some())
        else {
            return;
        };
        let mut extensions = span.extensions_mut();
        let Some(recording) = extensions.get_mut::<Recording>() else {
            return;
        };
        if !recording.context.sampled {
            return;
        }
        let mut span_event = SpanEvent {
            unix_nanos: unix_nanos(),
            name: String::new(),
            attributes: vec![(
                "level",
                AttributeValue::Text(event.metadata().level().to_string()),
            )],
        };
        event.record(&mut EventVisitor(&mut span_event));
        if *event.metadata().level() == tracing::Level::ERROR && recording.status == 0 {
            recording.status = 2;
        }
        recording.events.push(span_event);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(mut recording) = span.extensions_mut().remove::<Recording>() else {
            return;
        };
        if !recording.context.sampled {
            return;
        }
        recording.end_unix_nanos = unix_nanos();
        self.queue.push(|buf| encode_span(buf, &recording));
    }
}

/// The body of a `Span` message (opentelemetry/proto/trace/v1/trace.proto).
fn encode_span(buf: &mut Vec<u8>, span: &Recording) {
    bytes_field(buf, 1, &span.context.trace_id.to_be_bytes());
    bytes_field(buf, 2, &span.context.span_id.to_be_bytes());
    if !span.tracestate.is_empty() {
        bytes_field(buf, 3, span.tracestate.as_bytes());
    }
    if span.parent_span_id != 0 {
        bytes_field(buf, 4, &span.parent_span_id.to_be_bytes());
    }
    bytes_field(buf, 5, span.name.as_bytes());
    varint_field(buf, 6, span.kind as u64);
    fixed64_field(buf, 7, span.start_unix_nanos);
    fixed64_field(buf, 8, span.end_unix_nanos.max(span.start_unix_nanos));
    buf.extend_from_slice(span.attributes.bytes());
    for event in &span.events {
        encode_event(buf, event);
    }
    if span.status != 0 || !span.status_message.is_empty() {
        let message_len = if span.status_message.is_empty() {
            0
        } else {
            bytes_field_len(span.status_message.len())
        };
        let code_len = if span.status == 0 { 0 } else { 2 };
        key(buf, 15, LEN);
        varint(buf, (message_len + code_len) as u64);
        if !span.status_message.is_empty() {
            bytes_field(buf, 2, span.status_message.as_bytes());
        }
        if span.status != 0 {
            varint_field(buf, 3, span.status as u64);
        }
    }
}

/// An `Event` as field 11 of a span.
fn encode_event(buf: &mut Vec<u8>, event: &SpanEvent) {
    let mut body = Vec::with_capacity(64);
    fixed64_field(&mut body, 1, event.unix_nanos);
    bytes_field(&mut body, 2, event.name.as_bytes());
    for (name, value) in &event.attributes {
        key_value(&mut body, 3, name, value.as_ref());
    }
    bytes_field(buf, 11, &body);
}

/// Runs `f` on the recording of `span` (nothing happens when it has none: spans are not
/// exported, or the span is disabled or below info level).
pub fn with_recording<T>(span: &tracing::Span, f: impl FnOnce(&mut Recording) -> T) -> Option<T> {
    with_recording_in_scope(span, false, f)
}

/// Like [`with_recording`], but a span without a recording (one below info level that only the
/// log layer wants) stands for its nearest ancestor that has one.
pub fn with_nearest_recording<T>(span: &tracing::Span, f: impl FnOnce(&mut Recording) -> T) -> Option<T> {
    with_recording_in_scope(span, true, f)
}

fn with_recording_in_scope<T>(
    span: &tracing::Span,
    ancestors: bool,
    f: impl FnOnce(&mut Recording) -> T,
) -> Option<T> {
    let mut f = Some(f);
    let mut answer = None;
    span.with_subscriber(|(id, dispatch)| {
        let Some(registry) = dispatch.downcast_ref::<tracing_subscriber::Registry>() else {
            return;
        };
        let Some(mut data) = registry.span(id) else {
            return;
        };
        if ancestors
            && data.extensions().get::<Recording>().is_none()
            && let Some(ancestor) = data
                .scope()
                .find(|ancestor| ancestor.extensions().get::<Recording>().is_some())
        {
            data = ancestor;
        }
        if let Some(recording) = data.extensions_mut().get_mut::<Recording>()
            && let Some(f) = f.take()
        {
            answer = Some(f(recording));
        }
    });
    answer
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value;
    use opentelemetry_proto::tonic::trace::v1::{ScopeSpans, Span};
    use prost::Message;
    use tracing_subscriber::layer::SubscriberExt;

    /// A recorded span with a bit of everything.
    pub(crate) fn sample_recording() -> Recording {
        Recording {
            context: SpanContext {
                trace_id: 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736,
                span_id: 0x00f0_67aa_0ba9_02b7,
                sampled: true,
            },
            parent_span_id: 7,
            tracestate: "vendor=1".to_owned(),
            name: Cow::Borrowed("lab.orders.v1.OrdersService/GetOrder"),
            kind: Kind::Server,
            status: 2,
            status_message: String::new(),
            start_unix_nanos: 1_000,
            end_unix_nanos: 2_000,
            attributes: {
                let mut attributes = otlp::Attributes::default();
                attributes.push("rpc.system", ValueRef::Text("grpc"));
                attributes.push("rpc.grpc.status_code", ValueRef::Int(-1));
                attributes.push("lab.flag", ValueRef::Bool(true));
                attributes.push("lab.ratio", ValueRef::Double(0.5));
                attributes.set("rpc.grpc.status_code", ValueRef::Int(-1));
                attributes
            },
            events: vec![SpanEvent {
                unix_nanos: 1_500,
                name: "peer unreachable".to_owned(),
                attributes: vec![("level", AttributeValue::Text("WARN".to_owned()))],
            }],
        }
    }

    fn exported(queue: &otlp::Queue) -> Vec<Span> {
        queue
            .take()
            .into_iter()
            .flat_map(|batch| {
                ScopeSpans::decode(batch.bytes.as_slice())
                    .expect("valid protobuf")
                    .spans
            })
            .collect()
    }

    fn text(span: &Span, key: &str) -> Option<String> {
        span.attributes
            .iter()
            .find(|pair| pair.key == key)
            .and_then(|pair| pair.value.as_ref()?.value.clone())
            .map(|value| match value {
                any_value::Value::StringValue(text) => text,
                any_value::Value::IntValue(number) => number.to_string(),
                any_value::Value::BoolValue(flag) => flag.to_string(),
                any_value::Value::DoubleValue(number) => number.to_string(),
                other => format!("{other:?}"),
            })
    }

    fn with_layer(sampler: Sampler, work: impl FnOnce()) -> Vec<Span> {
        let queue = Arc::new(otlp::Queue::new(16, 1024));
        let subscriber = tracing_subscriber::registry().with(SpanLayer::new(sampler, Arc::clone(&queue)));
        tracing::subscriber::with_default(subscriber, work);
        exported(&queue)
    }

    const ALWAYS: Sampler = Sampler {
        parent_based: true,
        ratio: 1.0,
    };

    #[test]
    fn a_span_is_encoded_as_the_otlp_protobuf_a_collector_decodes() {
        let recording = sample_recording();
        let queue = otlp::Queue::new(16, 16);
        queue.push(|buf| encode_span(buf, &recording));
        let envelope = otlp::Envelope::new(
            &otlp::resource("orders-svc", None, Some("deployment.environment=dev")),
            "orders-svc",
        );
        let batch = queue.take().pop_front().unwrap();
        let request = ExportTraceServiceRequest::decode(envelope.request(&batch.bytes).as_slice())
            .expect("a valid export request");
        let resource_spans = &request.resource_spans[0];
        let resource = resource_spans.resource.as_ref().unwrap();
        assert_eq!(resource.attributes[0].key, "service.name");
        assert!(
            resource
                .attributes
                .iter()
                .any(|pair| pair.key == "deployment.environment")
        );
        let scope_spans = &resource_spans.scope_spans[0];
        assert_eq!(scope_spans.scope.as_ref().unwrap().name, "orders-svc");
        let span = &scope_spans.spans[0];
        assert_eq!(hex::encode(&span.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex::encode(&span.span_id), "00f067aa0ba902b7");
        assert_eq!(hex::encode(&span.parent_span_id), "0000000000000007");
        assert_eq!(span.trace_state, "vendor=1");
        assert_eq!(span.name, "lab.orders.v1.OrdersService/GetOrder");
        assert_eq!(span.kind, Kind::Server as i32);
        assert_eq!(
            (span.start_time_unix_nano, span.end_time_unix_nano),
            (1_000, 2_000)
        );
        assert_eq!(text(span, "rpc.system").as_deref(), Some("grpc"));
        assert_eq!(text(span, "rpc.grpc.status_code").as_deref(), Some("-1"));
        assert_eq!(text(span, "lab.flag").as_deref(), Some("true"));
        assert_eq!(text(span, "lab.ratio").as_deref(), Some("0.5"));
        assert_eq!(span.status.as_ref().unwrap().code, 2);
        assert_eq!(span.events[0].name, "peer unreachable");
        assert_eq!(span.events[0].time_unix_nano, 1_500);
    }

    #[test]
    fn spans_take_their_name_kind_status_and_parent_from_tracing() {
        let spans = with_layer(ALWAYS, || {
            let parent = tracing::info_span!(
                "rpc.server",
                otel.name = %format_args!("{}/{}", "svc", "Get"),
                otel.kind = "server",
                otel.status_code = tracing::field::Empty,
                rpc.system = "grpc",
                rpc.grpc.status_code = tracing::field::Empty,
            );
            let _entered = parent.enter();
            let child = tracing::info_span!(
                "db",
                otel.name = "SELECT orders.order_views",
                otel.kind = "client"
            );
            child.in_scope(|| tracing::warn!(attempt = 2, "slow statement"));
            drop(child);
            parent.record("rpc.grpc.status_code", 13);
            parent.record("otel.status_code", "error");
        });
        assert_eq!(spans.len(), 2);
        let (child, parent) = (&spans[0], &spans[1]);
        assert_eq!(parent.name, "svc/Get");
        assert_eq!(parent.kind, Kind::Server as i32);
        assert!(parent.parent_span_id.is_empty(), "a root");
        assert_eq!(text(parent, "rpc.grpc.status_code").as_deref(), Some("13"));
        assert_eq!(
            text(parent, "otel.name"),
            None,
            "otel.* fields are not attributes"
        );
        assert_eq!(parent.status.as_ref().unwrap().code, 2);
        assert_eq!(child.name, "SELECT orders.order_views");
        assert_eq!(child.kind, Kind::Client as i32);
        assert_eq!(child.trace_id, parent.trace_id);
        assert_eq!(child.parent_span_id, parent.span_id);
        assert_eq!(child.events.len(), 1);
        assert_eq!(child.events[0].name, "slow statement");
        assert!(child.start_time_unix_nano <= child.end_time_unix_nano);
    }

    #[test]
    fn a_span_continuing_a_remote_trace_is_its_child_and_passes_itself_on() {
        let remote = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut passed_on = None;
        let spans = with_layer(ALWAYS, || {
            let span = tracing::info_span!("rpc.server", otel.name = "svc/Get");
            crate::telemetry::continue_trace(&span, remote, "vendor=1");
            let _entered = span.enter();
            crate::telemetry::annotate("lab.order.number", "LAB-1".to_owned());
            passed_on = Some(crate::telemetry::trace_context_of(&tracing::Span::current()));
        });
        assert_eq!(spans.len(), 1);
        let span = &spans[0];
        assert_eq!(hex::encode(&span.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex::encode(&span.parent_span_id), "00f067aa0ba902b7");
        assert_eq!(span.trace_state, "vendor=1");
        assert_eq!(text(span, "lab.order.number").as_deref(), Some("LAB-1"));
        let (traceparent, tracestate) = passed_on.unwrap().unwrap();
        assert_eq!(
            traceparent,
            format!(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01",
                hex::encode(&span.span_id)
            )
        );
        assert_eq!(tracestate, "vendor=1");
    }

    #[test]
    fn spans_of_unsampled_traces_pass_ids_on_but_are_not_exported() {
        let never = Sampler::from_env(Some("parentbased_always_off"), None);
        let mut traceparent = String::new();
        let spans = with_layer(never, || {
            let root = tracing::info_span!("root");
            let _entered = root.enter();
            let child = tracing::info_span!("child");
            traceparent = crate::telemetry::trace_context_of(&child).unwrap().0;
        });
        assert!(spans.is_empty());
        assert!(traceparent.ends_with("-00"), "{traceparent}");
        assert!(crate::telemetry::is_valid_traceparent(&traceparent));
    }

    /// A log layer that keeps the messages of the events it sees.
    struct Messages(Arc<std::sync::Mutex<Vec<String>>>);

    impl<S: Subscriber> tracing_subscriber::Layer<S> for Messages {
        fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
            let mut message = SpanEvent {
                unix_nanos: 0,
                name: String::new(),
                attributes: Vec::new(),
            };
            event.record(&mut EventVisitor(&mut message));
            self.0.lock().unwrap().push(message.name);
        }
    }

    #[test]
    fn spans_below_info_that_only_the_logs_want_are_skipped_and_their_children_stay_in_the_trace() {
        use tracing_subscriber::Layer;
        let queue = Arc::new(otlp::Queue::new(16, 1024));
        let logged = Arc::new(std::sync::Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry()
            .with(
                SpanLayer::new(ALWAYS, Arc::clone(&queue))
                    .with_logs(tracing_subscriber::EnvFilter::new("debug")),
            )
            .with(Messages(Arc::clone(&logged)).with_filter(tracing_subscriber::EnvFilter::new("debug")));
        let mut passed_on = None;
        tracing::subscriber::with_default(subscriber, || {
            let root = tracing::info_span!("root");
            let _root = root.enter();
            let middle = tracing::debug_span!("middle");
            let _middle = middle.enter();
            tracing::debug!("a debug line");
            tracing::trace!("a trace line");
            passed_on = crate::telemetry::trace_context_of(&middle);
            let child = tracing::info_span!("child");
            let _child = child.enter();
            tracing::warn!("a warning");
        });
        let spans = exported(&queue);
        assert_eq!(
            spans.iter().map(|span| span.name.as_str()).collect::<Vec<_>>(),
            ["child", "root"],
            "the debug span is not exported"
        );
        let (child, root) = (&spans[0], &spans[1]);
        assert_eq!(child.parent_span_id, root.span_id);
        assert_eq!(child.trace_id, root.trace_id);
        assert_eq!(child.events[0].name, "a warning");
        assert_eq!(
            *logged.lock().unwrap(),
            ["a debug line", "a warning"],
            "the log layer still gets what its filter wants, and only that"
        );
        let (traceparent, _) = passed_on.unwrap();
        assert!(traceparent.contains(&hex::encode(&root.span_id)), "{traceparent}");
    }

    #[test]
    fn the_layer_keeps_the_global_level_at_info_unless_the_logs_want_more() {
        use tracing::level_filters::LevelFilter;
        use tracing_subscriber::{EnvFilter, Layer, Registry};
        let queue = Arc::new(otlp::Queue::new(16, 16));
        let hint = |logs: Option<&str>| {
            let mut layer = SpanLayer::new(ALWAYS, Arc::clone(&queue));
            if let Some(logs) = logs {
                layer = layer.with_logs(EnvFilter::new(logs));
            }
            Layer::<Registry>::max_level_hint(&layer)
        };
        assert_eq!(hint(None), Some(LevelFilter::INFO));
        assert_eq!(hint(Some("warn")), Some(LevelFilter::INFO));
        assert_eq!(hint(Some("warn,h2=debug")), Some(LevelFilter::DEBUG));
    }

    #[test]
    fn a_span_context_writes_and_reads_back_its_traceparent() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = SpanContext::parse(text).unwrap();
        assert_eq!(context.trace_id, 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736);
        assert_eq!(context.span_id, 0x00f0_67aa_0ba9_02b7);
        assert_eq!(context.traceparent(), text);
        let unsampled = SpanContext {
            trace_id: 1,
            span_id: u64::MAX,
            sampled: false,
        };
        assert_eq!(
            unsampled.traceparent(),
            "00-00000000000000000000000000000001-ffffffffffffffff-00"
        );
        assert_eq!(SpanContext::parse(&unsampled.traceparent()), Some(unsampled));
    }

    #[test]
    fn samplers_follow_the_standard_names() {
        let ratio = Sampler::from_env(Some("parentbased_traceidratio"), Some("0.1"));
        assert_eq!(
            ratio,
            Sampler {
                parent_based: true,
                ratio: 0.1
            }
        );
        assert!(ratio.sampled(123, Some(true)), "a sampled parent is followed");
        assert!(!ratio.sampled(123, Some(false)));
        let recorded = (0..10_000u128)
            .filter(|index| {
                ratio.sampled(
                    index.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835),
                    None,
                )
            })
            .count();
        assert!((700..1300).contains(&recorded), "{recorded} of 10000 at 0.1");
        assert_eq!(Sampler::from_env(None, None), ALWAYS);
        assert_eq!(Sampler::from_env(Some("nonsense"), Some("x")), ALWAYS);
        let root_only = Sampler::from_env(Some("traceidratio"), Some("0"));
        assert!(!root_only.sampled(u128::MAX, Some(true)), "not parent-based");
        assert!(Sampler::from_env(Some("always_on"), None).sampled(0, Some(false)));
    }
}
