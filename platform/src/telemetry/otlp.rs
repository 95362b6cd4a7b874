//! OTLP/gRPC export of the spans [`super::spans`] records: each closed, sampled span is encoded
//! once, straight into protobuf (`opentelemetry.proto.trace.v1.Span`), into the current batch
//! of a bounded queue; a thread of its own sends the batches to
//! `opentelemetry.proto.collector.trace.v1.TraceService/Export`, wrapped in the process's
//! resource and scope, every `OTEL_BSP_SCHEDULE_DELAY` or as soon as a batch is full. A full
//! queue drops spans (counted, logged) rather than slow a request; a failed export is logged
//! and dropped, never retried in a loop.
//!
//! Settings, the OpenTelemetry specification's variables (the `_TRACES_` form first):
//! `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT` (e.g. `http://jaeger-collector:4317`),
//! `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` (`key=value,…`, values percent-decoded),
//! `OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT` (ms, default 10000), `OTEL_BSP_SCHEDULE_DELAY` (ms,
//! default 5000), `OTEL_BSP_MAX_QUEUE_SIZE` (spans, default 8192) and
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (spans, default 2048); the resource comes from
//! `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttributeValue {
    Text(String),
    Int(i64),
    Bool(bool),
    Double(f64),
}

impl From<opentelemetry::Value> for AttributeValue {
    /// The OpenTelemetry API's value (an array is kept as its text form).
    fn from(value: opentelemetry::Value) -> Self {
        match value {
            opentelemetry::Value::Bool(flag) => Self::Bool(flag),
            opentelemetry::Value::I64(number) => Self::Int(number),
            opentelemetry::Value::F64(number) => Self::Double(number),
            opentelemetry::Value::String(text) => Self::Text(text.into()),
            other => Self::Text(other.to_string()),
        }
    }
}

// ---- protobuf, the few shapes OTLP traces need ----

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
pub(super) const LEN: u8 = 2;

pub(super) fn varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

fn varint_len(value: u64) -> usize {
    // 1 byte per 7 bits, at least one.
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// The key of field `tag` (every tag here is below 16: one byte).
pub(super) fn key(buf: &mut Vec<u8>, tag: u8, wire: u8) {
    buf.push((tag << 3) | wire);
}

pub(super) fn bytes_field(buf: &mut Vec<u8>, tag: u8, data: &[u8]) {
    key(buf, tag, LEN);
    varint(buf, data.len() as u64);
    buf.extend_from_slice(data);
}

pub(super) fn bytes_field_len(length: usize) -> usize {
    1 + varint_len(length as u64) + length
}

pub(super) fn fixed64_field(buf: &mut Vec<u8>, tag: u8, value: u64) {
    key(buf, tag, FIXED64);
    buf.extend_from_slice(&value.to_le_bytes());
}

pub(super) fn varint_field(buf: &mut Vec<u8>, tag: u8, value: u64) {
    key(buf, tag, VARINT);
    varint(buf, value);
}

/// An attribute's value, borrowed: what [`Attributes::set`] encodes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueRef<'a> {
    Text(&'a str),
    Int(i64),
    Bool(bool),
    Double(f64),
}

impl AttributeValue {
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Self::Text(text) => ValueRef::Text(text),
            Self::Int(number) => ValueRef::Int(*number),
            Self::Bool(flag) => ValueRef::Bool(*flag),
            Self::Double(number) => ValueRef::Double(*number),
        }
    }
}

/// The length of an `AnyValue` message.
fn any_value_len(value: ValueRef<'_>) -> usize {
    match value {
        ValueRef::Text(text) => bytes_field_len(text.len()),
        ValueRef::Bool(_) => 2,
        ValueRef::Int(number) => 1 + varint_len(number as u64),
        ValueRef::Double(_) => 9,
    }
}

/// A `KeyValue` as repeated field `tag`.
pub(super) fn key_value(buf: &mut Vec<u8>, tag: u8, name: &str, value: ValueRef<'_>) {
    let any_len = any_value_len(value);
    key(buf, tag, LEN);
    varint(
        buf,
        (bytes_field_len(name.len()) + bytes_field_len(any_len)) as u64,
    );
    bytes_field(buf, 1, name.as_bytes());
    key(buf, 2, LEN);
    varint(buf, any_len as u64);
    match value {
        ValueRef::Text(text) => bytes_field(buf, 1, text.as_bytes()),
        ValueRef::Bool(flag) => varint_field(buf, 2, u64::from(flag)),
        ValueRef::Int(number) => varint_field(buf, 3, number as u64),
        ValueRef::Double(number) => fixed64_field(buf, 4, number.to_bits()),
    }
}

/// Reads a varint at the start of `buf`: its value and length.
fn read_varint(buf: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (index, byte) in buf.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return Some((value, index + 1));
        }
    }
    None
}

/// A span's attributes, kept as the encoded `Span.attributes` fields they become: a value is
/// written once, as it is recorded, without a copy of its text (one buffer per span instead of
/// one string per attribute), and closing the span copies the bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attributes {
    encoded: Vec<u8>,
}

/// `Span.attributes` is field 9.
const SPAN_ATTRIBUTES: u8 = 9;

impl Attributes {
    /// Room for `count` typical attributes.
    pub fn with_capacity(count: usize) -> Self {
        Self {
            encoded: Vec::with_capacity(count * 40),
        }
    }

    /// Adds attribute `name` (the caller knows it is not set yet: a span's fields are distinct).
    pub fn push(&mut self, name: &str, value: ValueRef<'_>) {
        key_value(&mut self.encoded, SPAN_ATTRIBUTES, name, value);
    }

    /// Sets attribute `name`, replacing its value when it is set.
    pub fn set(&mut self, name: &str, value: ValueRef<'_>) {
        if let Some(range) = self.find(name) {
            self.encoded.drain(range);
        }
        self.push(name, value);
    }

    /// The byte range of attribute `name`'s field.
    fn find(&self, name: &str) -> Option<std::ops::Range<usize>> {
        let mut at = 0;
        while at < self.encoded.len() {
            // key byte, length of the KeyValue, then its key field: tag byte, length, bytes
            let (length, length_len) = read_varint(&self.encoded[at + 1..])?;
            let body = at + 1 + length_len;
            let end = body + length as usize;
            let (name_len, name_len_len) = read_varint(&self.encoded[body + 1..])?;
            let name_at = body + 1 + name_len_len;
            if self.encoded.get(name_at..name_at + name_len as usize) == Some(name.as_bytes()) {
                return Some(at..end);
            }
            at = end;
        }
        None
    }

    /// The encoded fields.
    pub fn bytes(&self) -> &[u8] {
        &self.encoded
    }
}

/// The `ResourceSpans.resource` field and the `ScopeSpans.scope` field of every request.
pub struct Envelope {
    resource: Vec<u8>,
    scope: Vec<u8>,
}

impl Envelope {
    pub fn new(resource: &[(String, String)], scope_name: &str) -> Self {
        let mut attributes = Vec::new();
        for (name, value) in resource {
            key_value(&mut attributes, 1, name, ValueRef::Text(value));
        }
        let mut field = Vec::new();
        bytes_field(&mut field, 1, &attributes);
        let mut scope_body = Vec::new();
        bytes_field(&mut scope_body, 1, scope_name.as_bytes());
        let mut scope = Vec::new();
        bytes_field(&mut scope, 1, &scope_body);
        Self {
            resource: field,
            scope,
        }
    }

    /// An `ExportTraceServiceRequest` holding `spans` (encoded `ScopeSpans.spans` fields), as
    /// the exporter sends it in two parts.
    #[cfg(test)]
    pub fn request(&self, spans: &[u8]) -> Vec<u8> {
        let mut request = self.header(spans.len());
        request.extend_from_slice(spans);
        request
    }

    /// What an `ExportTraceServiceRequest` holding `spans_len` bytes of spans has before them.
    pub fn header(&self, spans_len: usize) -> Vec<u8> {
        let scope_spans_len = self.scope.len() + spans_len;
        let resource_spans_len = self.resource.len() + bytes_field_len(scope_spans_len);
        let mut header = Vec::with_capacity(self.resource.len() + self.scope.len() + 16);
        key(&mut header, 1, LEN);
        varint(&mut header, resource_spans_len as u64);
        header.extend_from_slice(&self.resource);
        key(&mut header, 2, LEN);
        varint(&mut header, scope_spans_len as u64);
        header.extend_from_slice(&self.scope);
        header
    }
}

// ---- the queue ----

/// Encoded spans waiting for export, in batches.
pub struct Batch {
    /// `ScopeSpans.spans` fields, one per span.
    pub bytes: Vec<u8>,
    pub spans: usize,
}

#[derive(Default)]
struct Pending {
    batches: VecDeque<Batch>,
    queued: usize,
}

/// Batch buffers kept for reuse once sent (a fresh buffer of a full batch's size costs page
/// faults on the request path as spans are written into it).
const SPARE_BUFFERS: usize = 4;

/// The bounded queue between the span layer and the export thread.
pub struct Queue {
    pending: Mutex<Pending>,
    spare: Mutex<Vec<Vec<u8>>>,
    batch_size: usize,
    max_queued: usize,
    /// Wakes the export thread when a batch is full.
    full: tokio::sync::Notify,
    dropped: AtomicU64,
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(1024));
}

impl Queue {
    pub fn new(batch_size: usize, max_queued: usize) -> Self {
        Self {
            pending: Mutex::new(Pending::default()),
            spare: Mutex::new(Vec::new()),
            batch_size: batch_size.max(1),
            max_queued: max_queued.max(1),
            full: tokio::sync::Notify::new(),
            dropped: AtomicU64::new(0),
        }
    }

    /// Adds a closed span to the queue, `encode` writing its `Span` message body (dropped, and
    /// counted, when the queue is full).
    pub fn push(&self, encode: impl FnOnce(&mut Vec<u8>)) {
        SCRATCH.with(|scratch| {
            let mut body = scratch.borrow_mut();
            body.clear();
            encode(&mut body);
            let batch_full = {
                let mut pending = self.pending.lock().unwrap_or_else(|poison| poison.into_inner());
                if pending.queued >= self.max_queued {
                    drop(pending);
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                let open = pending
                    .batches
                    .back()
                    .is_some_and(|batch| batch.spans < self.batch_size);
                if !open {
                    let bytes = self.spare_buffer();
                    pending.batches.push_back(Batch { bytes, spans: 0 });
                }
                pending.queued += 1;
                let batch = pending.batches.back_mut().expect("a batch was just made");
                bytes_field(&mut batch.bytes, 2, &body);
                batch.spans += 1;
                batch.spans == self.batch_size
            };
            if batch_full {
                self.full.notify_one();
            }
        });
    }

    /// A buffer for a new batch: a sent one when there is one.
    fn spare_buffer(&self) -> Vec<u8> {
        let spare = self.spare.lock().ok().and_then(|mut spare| spare.pop());
        spare.unwrap_or_else(|| Vec::with_capacity(self.batch_size.min(4096) * 512))
    }

    /// Takes back a sent batch's buffer for a later batch.
    pub fn recycle(&self, mut bytes: Vec<u8>) {
        bytes.clear();
        if let Ok(mut spare) = self.spare.lock()
            && spare.len() < SPARE_BUFFERS
        {
            spare.push(bytes);
        }
    }

    /// Takes every batch queued so far.
    pub fn take(&self) -> VecDeque<Batch> {
        let mut pending = self.pending.lock().unwrap_or_else(|poison| poison.into_inner());
        pending.queued = 0;
        std::mem::take(&mut pending.batches)
    }

    /// Spans dropped because the queue was full, since the start.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

// ---- settings ----

/// Where and how spans are exported.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub endpoint: String,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    pub schedule_delay: Duration,
    pub batch_size: usize,
    pub max_queued: usize,
    /// Resource attributes (`service.name` first).
    pub resource: Vec<(String, String)>,
}

impl Settings {
    /// The settings the variables give (`None` without an endpoint); `variable` reads one.
    pub fn from_env(service_name: &str, variable: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let either = |traces: &str, general: &str| {
            variable(traces)
                .filter(|value| !value.trim().is_empty())
                .or_else(|| variable(general).filter(|value| !value.trim().is_empty()))
        };
        let endpoint = either(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        )?;
        let endpoint = endpoint.trim();
        let endpoint = if endpoint.contains("://") {
            endpoint.to_owned()
        } else {
            format!("http://{endpoint}")
        };
        let number = |name: &str, default: u64| {
            variable(name)
                .and_then(|value| value.trim().parse::<u64>().ok())
                .unwrap_or(default)
        };
        let timeout_ms = either("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
            .and_then(|value| value.trim().parse::<u64>().ok())
            .unwrap_or(10_000);
        let headers = either("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
            .map(|headers| pairs(&headers))
            .unwrap_or_default();
        Some(Self {
            endpoint,
            headers,
            timeout: Duration::from_millis(timeout_ms),
            schedule_delay: Duration::from_millis(number("OTEL_BSP_SCHEDULE_DELAY", 5000)),
            batch_size: number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 2048) as usize,
            max_queued: number("OTEL_BSP_MAX_QUEUE_SIZE", 8192) as usize,
            resource: resource(
                service_name,
                variable("OTEL_SERVICE_NAME").as_deref(),
                variable("OTEL_RESOURCE_ATTRIBUTES").as_deref(),
            ),
        })
    }
}

/// `key=value,…` with values percent-decoded (the W3C baggage form the variables use); pairs
/// without `=` or with an empty key are skipped.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            let name = name.trim();
            (!name.is_empty()).then(|| (name.to_owned(), percent_decoded(value.trim())))
        })
        .collect()
}

fn percent_decoded(text: &str) -> String {
    let hex = |byte: u8| char::from(byte).to_digit(16).map(|digit| digit as u8);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%'
            && at + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[at + 1]), hex(bytes[at + 2]))
        {
            out.push(high << 4 | low);
            at += 3;
            continue;
        }
        out.push(bytes[at]);
        at += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The resource: `service.name` (`OTEL_SERVICE_NAME`, else `service.name` of
/// `OTEL_RESOURCE_ATTRIBUTES`, else the process's own name), the other attributes of
/// `OTEL_RESOURCE_ATTRIBUTES`, and `telemetry.sdk.*`.
pub fn resource(
    service_name: &str,
    otel_service_name: Option<&str>,
    resource_attributes: Option<&str>,
) -> Vec<(String, String)> {
    let attributes = resource_attributes.map(pairs).unwrap_or_default();
    let named = otel_service_name
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .or_else(|| {
            attributes
                .iter()
                .find(|(name, _)| name == "service.name")
                .map(|(_, value)| value.clone())
        })
        .unwrap_or_else(|| service_name.to_owned());
    let mut resource = vec![("service.name".to_owned(), named)];
    for (name, value) in attributes {
        if name != "service.name" && !resource.iter().any(|(seen, _)| *seen == name) {
            resource.push((name, value));
        }
    }
    for (name, value) in [
        ("telemetry.sdk.name", "lab-platform"),
        ("telemetry.sdk.language", "rust"),
        ("telemetry.sdk.version", env!("CARGO_PKG_VERSION")),
    ] {
        if !resource.iter().any(|(seen, _)| seen == name) {
            resource.push((name.to_owned(), value.to_owned()));
        }
    }
    resource
}

// ---- the export thread ----

/// The export thread's handle: flushes and stops it.
pub struct Exporter {
    stop: Arc<tokio::sync::Notify>,
    done: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    timeout: Duration,
}

impl Exporter {
    /// Starts the thread that sends `queue`'s batches per `settings`, the scope named
    /// `scope_name`.
    pub fn start(settings: Settings, queue: Arc<Queue>, scope_name: &str) -> std::io::Result<Self> {
        let stop = Arc::new(tokio::sync::Notify::new());
        let (done_tx, done) = std::sync::mpsc::channel();
        let envelope = Envelope::new(&settings.resource, scope_name);
        let timeout = settings.timeout;
        let stopping = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("otlp-export".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
                if let Ok(runtime) = runtime {
                    runtime.block_on(export_loop(settings, queue, envelope, stopping));
                }
                let _ = done_tx.send(());
            })?;
        Ok(Self {
            stop,
            done: Mutex::new(Some(done)),
            timeout,
        })
    }

    /// Sends what is queued and stops the thread (waits at most the export timeout).
    pub fn shutdown(&self) {
        let done = self.done.lock().ok().and_then(|mut done| done.take());
        if let Some(done) = done {
            self.stop.notify_one();
            let _ = done.recv_timeout(self.timeout + Duration::from_secs(1));
        }
    }
}

const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

async fn export_loop(
    settings: Settings,
    queue: Arc<Queue>,
    envelope: Envelope,
    stop: Arc<tokio::sync::Notify>,
) {
    let channel = match tonic::transport::Endpoint::from_shared(settings.endpoint.clone()) {
        Ok(endpoint) => endpoint
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .tcp_nodelay(true)
            .connect_lazy(),
        Err(error) => {
            eprintln!("OTLP exporter to {} not started: {error}", settings.endpoint);
            return;
        }
    };
    let metadata = metadata(&settings.headers);
    let mut client = tonic::client::Grpc::new(channel);
    let mut failures = Failures::default();
    let mut dropped_reported = 0;
    loop {
        let stopping = tokio::select! {
            () = tokio::time::sleep(settings.schedule_delay) => false,
            () = queue.full.notified() => false,
            () = stop.notified() => true,
        };
        for batch in queue.take() {
            let spans = batch.spans;
            let request = Outgoing {
                header: envelope.header(batch.bytes.len()),
                spans: batch.bytes,
                queue: Arc::clone(&queue),
            };
            let mut call = tonic::Request::new(request);
            *call.metadata_mut() = metadata.clone();
            call.set_timeout(settings.timeout);
            let sent = match client.ready().await {
                Ok(()) => client
                    .unary::<_, (), _>(call, http::uri::PathAndQuery::from_static(EXPORT_PATH), RawCodec)
                    .await
                    .map(|_| ())
                    .map_err(|status| status.to_string()),
                Err(error) => Err(error.to_string()),
            };
            if let Err(error) = sent {
                failures.report(spans, &settings.endpoint, &error);
            }
        }
        let dropped = queue.dropped();
        if dropped > dropped_reported {
            tracing::warn!(
                spans = dropped - dropped_reported,
                "trace spans dropped: the export queue (OTEL_BSP_MAX_QUEUE_SIZE) was full"
            );
            dropped_reported = dropped;
        }
        if stopping {
            return;
        }
    }
}

/// Logs failed exports at most once a minute (a collector that is down must not flood logs).
#[derive(Default)]
struct Failures {
    last_report: Option<std::time::Instant>,
    spans_since: usize,
}

impl Failures {
    fn report(&mut self, spans: usize, endpoint: &str, error: &str) {
        self.spans_since += spans;
        let due = self
            .last_report
            .is_none_or(|last| last.elapsed() >= Duration::from_secs(60));
        if due {
            tracing::warn!(
                spans = self.spans_since,
                %endpoint,
                %error,
                "trace spans not exported"
            );
            self.last_report = Some(std::time::Instant::now());
            self.spans_since = 0;
        }
    }
}

fn metadata(headers: &[(String, String)]) -> tonic::metadata::MetadataMap {
    let mut metadata = tonic::metadata::MetadataMap::new();
    for (name, value) in headers {
        let name = tonic::metadata::MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes());
        let value = tonic::metadata::MetadataValue::try_from(value.as_str());
        if let (Ok(name), Ok(value)) = (name, value) {
            metadata.insert(name, value);
        }
    }
    metadata
}

/// An export request: the envelope's header, then a batch of spans whose buffer goes back to
/// the queue once sent.
struct Outgoing {
    header: Vec<u8>,
    spans: Vec<u8>,
    queue: Arc<Queue>,
}

impl Drop for Outgoing {
    fn drop(&mut self) {
        self.queue.recycle(std::mem::take(&mut self.spans));
    }
}

/// A codec that sends bytes already encoded and ignores the answer's body (an
/// `ExportTraceServiceResponse`, whose partial-success counts nobody acts on).
#[derive(Clone, Copy)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Outgoing;
    type Decode = ();
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Outgoing;
    type Error = tonic::Status;

    fn encode(&mut self, item: Outgoing, dst: &mut tonic::codec::EncodeBuf<'_>) -> Result<(), tonic::Status> {
        use bytes::BufMut;
        dst.reserve(item.header.len() + item.spans.len());
        dst.put_slice(&item.header);
        dst.put_slice(&item.spans);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = ();
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<()>, tonic::Status> {
        use bytes::Buf;
        let remaining = src.remaining();
        src.advance(remaining);
        Ok(Some(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attribute_set_again_replaces_its_value_and_keeps_the_others() {
        use opentelemetry_proto::tonic::common::v1::any_value::Value;
        use opentelemetry_proto::tonic::trace::v1::Span;
        use prost::Message;
        let mut attributes = Attributes::with_capacity(4);
        attributes.push("http.route", ValueRef::Text("/orders/{id}"));
        attributes.push("http", ValueRef::Int(1));
        attributes.push("url.path", ValueRef::Text(&"x".repeat(300)));
        attributes.set("http", ValueRef::Bool(true));
        attributes.set("url.path", ValueRef::Text("/orders/1"));
        attributes.set("lab.ratio", ValueRef::Double(0.25));
        let span = Span::decode(attributes.bytes()).expect("Span.attributes fields");
        let pairs: Vec<(String, Option<Value>)> = span
            .attributes
            .into_iter()
            .map(|pair| (pair.key, pair.value.and_then(|value| value.value)))
            .collect();
        assert_eq!(
            pairs,
            [
                (
                    "http.route".to_owned(),
                    Some(Value::StringValue("/orders/{id}".to_owned()))
                ),
                ("http".to_owned(), Some(Value::BoolValue(true))),
                (
                    "url.path".to_owned(),
                    Some(Value::StringValue("/orders/1".to_owned()))
                ),
                ("lab.ratio".to_owned(), Some(Value::DoubleValue(0.25))),
            ]
        );
    }

    #[test]
    fn a_sent_batch_buffer_is_reused_for_a_later_batch() {
        let queue = Queue::new(1, 16);
        let span = |buf: &mut Vec<u8>| bytes_field(buf, 5, b"a span");
        queue.push(span);
        let sent = queue.take().pop_front().unwrap();
        let address = sent.bytes.as_ptr();
        queue.recycle(sent.bytes);
        queue.push(span);
        let next = queue.take().pop_front().unwrap();
        assert_eq!(next.bytes.as_ptr(), address);
        assert_eq!(next.spans, 1);
    }

    #[test]
    fn varints_take_one_byte_per_seven_bits() {
        for value in [0u64, 1, 127, 128, 300, 16_383, 16_384, u64::MAX] {
            let mut buf = Vec::new();
            varint(&mut buf, value);
            assert_eq!(buf.len(), varint_len(value), "{value}");
        }
        let mut buf = Vec::new();
        varint(&mut buf, 300);
        assert_eq!(buf, [0xac, 0x02]);
    }

    #[test]
    fn settings_follow_the_standard_variables_with_the_traces_form_first() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        assert_eq!(Settings::from_env("orders-svc", env(&[])), None);
        let settings = Settings::from_env(
            "orders-svc",
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4317"),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "Authorization=Bearer%20abc, x-team = lab",
                ),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "100"),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "deployment.environment=prod,service.name=orders-eu",
                ),
            ]),
        )
        .unwrap();
        assert_eq!(settings.endpoint, "http://traces:4317");
        assert_eq!(
            settings.headers,
            [
                ("Authorization".to_owned(), "Bearer abc".to_owned()),
                ("x-team".to_owned(), "lab".to_owned())
            ]
        );
        assert_eq!(settings.timeout, Duration::from_millis(2500));
        assert_eq!(settings.schedule_delay, Duration::from_millis(5000));
        assert_eq!((settings.batch_size, settings.max_queued), (100, 8192));
        assert_eq!(
            settings.resource[0],
            ("service.name".to_owned(), "orders-eu".to_owned())
        );
        assert!(
            settings
                .resource
                .contains(&("deployment.environment".to_owned(), "prod".to_owned()))
        );
        let bare = Settings::from_env(
            "orders-svc",
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317")]),
        )
        .unwrap();
        assert_eq!(bare.endpoint, "http://collector:4317");
        assert_eq!(bare.resource[0].1, "orders-svc");
        let named = resource("orders-svc", Some("orders-a"), Some("service.name=orders-b"));
        assert_eq!(named[0].1, "orders-a");
    }

    #[test]
    fn a_full_queue_drops_spans_and_batches_close_at_their_size() {
        let queue = Queue::new(2, 3);
        let span = |buf: &mut Vec<u8>| bytes_field(buf, 5, b"a span");
        for _ in 0..5 {
            queue.push(span);
        }
        assert_eq!(queue.dropped(), 2);
        let batches = queue.take();
        assert_eq!(
            batches.iter().map(|batch| batch.spans).collect::<Vec<_>>(),
            [2, 1]
        );
        assert!(queue.take().is_empty());
        queue.push(span);
        assert_eq!(queue.take().len(), 1, "room again once taken");
    }
}
