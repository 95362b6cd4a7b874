//! OTLP/gRPC export of the spans [`super::spans`] records: each closed, sampled span is encoded
//! once, straight into protobuf (`opentelemetry.proto.trace.v1.Span`), into the current batch
//! of a bounded queue; a thread of its own sends the batches to
//! `opentelemetry.proto.collector.trace.v1.TraceService/Export`, wrapped in the process's
//! resource and scope, every `OTEL_BSP_SCHEDULE_DELAY` or as soon as a batch is full. A full
//! queue drops spans (counted, logged) rather than slow a request.
//!
//! An export the collector may take later (the OTLP specification's retryable gRPC codes:
//! `UNAVAILABLE`, `CANCELLED`, `DEADLINE_EXCEEDED`, `ABORTED`, `OUT_OF_RANGE`, `DATA_LOSS`, and
//! `RESOURCE_EXHAUSTED` when the collector sends a `google.rpc.RetryInfo`; and a connection
//! that fails, refused or reset, whatever code tonic gives it) is retried with exponential backoff and jitter ([`Retry`]: 1 s, doubling
//! up to 5 s, each wait drawn between half and all of it; the `RetryInfo` delay instead when the
//! collector gives one), for at most 30 s from its first attempt; then it is dropped. Any other
//! answer (`INVALID_ARGUMENT`, `UNAUTHENTICATED`, …) drops the batch at once. Failures are logged
//! at most once a minute. While a batch is retried, spans keep queueing behind it (the queue's
//! bound counts them, so overflow drops as ever); once shutdown is asked the wait is cut short
//! and each batch has one last attempt.
//!
//! Settings, the OpenTelemetry specification's variables (the `_TRACES_` form first):
//! `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT` (e.g. `http://jaeger-collector:4317`; `https://…`
//! speaks TLS; without a scheme TLS too, unless `OTEL_EXPORTER_OTLP_[TRACES_]INSECURE=true`),
//! `OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE` (PEM CA certificates that verify an `https://`
//! collector instead of the system's roots), `OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_CERTIFICATE`
//! and `…_CLIENT_KEY` (PEM, both or neither: a client certificate for collectors that require
//! one), `OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION` (`gzip` or `none`, the default),
//! `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` (`key=value,…`, values percent-decoded),
//! `OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT` (ms, default 10000, each attempt's limit),
//! `OTEL_BSP_SCHEDULE_DELAY` (ms, default 5000), `OTEL_BSP_MAX_QUEUE_SIZE` (spans, default 8192)
//! and `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (spans, default 2048); the resource comes from
//! `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`. The TLS files are read and checked before
//! any span is made ([`Settings::connection`]): unusable ones, or an endpoint that is no URI,
//! disable the export with an error naming the variable, and the process runs on without spans
//! (as without an endpoint). A value not understood (a compression other than `gzip` or `none`,
//! an `INSECURE` that is no boolean) is warned about and its default used.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
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

    /// How many batches are queued (the last one may still be filling).
    pub fn batches(&self) -> usize {
        let pending = self.pending.lock().unwrap_or_else(|poison| poison.into_inner());
        pending.batches.len()
    }

    /// Takes the oldest batch: its spans no longer count against the queue's bound. The export
    /// thread takes one at a time, so that the batches waiting behind one being retried still
    /// count.
    pub fn pop(&self) -> Option<Batch> {
        let mut pending = self.pending.lock().unwrap_or_else(|poison| poison.into_inner());
        let batch = pending.batches.pop_front()?;
        pending.queued -= batch.spans;
        Some(batch)
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

/// How export requests are compressed (`OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    #[default]
    None,
    Gzip,
}

/// A file a setting names: the variable that named it (for messages) and its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSetting {
    pub variable: &'static str,
    pub path: String,
}

impl std::fmt::Display for FileSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.variable, self.path)
    }
}

/// How an export the collector may take later is retried (no standard variable sets these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// The first wait; each next one doubles, up to `max`. Each wait is drawn between half and
    /// all of it (jitter: processes that failed together do not retry together).
    pub initial: Duration,
    pub max: Duration,
    /// The longest a batch is tried, from its first attempt: a wait that would end past it is
    /// not waited, and the batch is dropped. It bounds how long the batches behind one wait.
    pub budget: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(5),
            budget: Duration::from_secs(30),
        }
    }
}

/// Where and how spans are exported.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The collector's URI, with its scheme (`https` speaks TLS).
    pub endpoint: String,
    pub headers: Vec<(String, String)>,
    /// Each attempt's time limit (and the TLS handshake's).
    pub timeout: Duration,
    pub schedule_delay: Duration,
    pub batch_size: usize,
    pub max_queued: usize,
    /// Resource attributes (`service.name` first).
    pub resource: Vec<(String, String)>,
    /// PEM CA certificates that verify an `https` collector (the system's roots without it).
    pub certificate: Option<FileSetting>,
    /// PEM certificate chain and key presented to an `https` collector.
    pub client_certificate: Option<FileSetting>,
    pub client_key: Option<FileSetting>,
    pub compression: Compression,
    pub retry: Retry,
    /// Values that were not understood (their defaults are used), to be logged as warnings once
    /// the log is up.
    pub warnings: Vec<String>,
}

impl Settings {
    /// The settings the variables give (`None` without an endpoint); `variable` reads one.
    /// Files are only named here: [`Self::connection`] reads them.
    pub fn from_env(service_name: &str, variable: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let named = |traces: &'static str, general: &'static str| {
            [traces, general].into_iter().find_map(|name| {
                variable(name)
                    .filter(|value| !value.trim().is_empty())
                    .map(|value| (name, value.trim().to_owned()))
            })
        };
        let either =
            |traces: &'static str, general: &'static str| named(traces, general).map(|(_, value)| value);
        let mut warnings = Vec::new();
        let endpoint = either(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        )?;
        // The specification: `http` and `https` decide; without a scheme, TLS unless INSECURE.
        let insecure = match named(
            "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
            "OTEL_EXPORTER_OTLP_INSECURE",
        ) {
            None => false,
            Some((_, value)) if value.eq_ignore_ascii_case("true") => true,
            Some((_, value)) if value.eq_ignore_ascii_case("false") => false,
            Some((name, value)) => {
                warnings.push(format!("{name}={value} is neither true nor false: read as false"));
                false
            }
        };
        let endpoint = if endpoint.contains("://") {
            endpoint
        } else if insecure {
            format!("http://{endpoint}")
        } else {
            format!("https://{endpoint}")
        };
        let number = |name: &str, default: u64| {
            variable(name)
                .and_then(|value| value.trim().parse::<u64>().ok())
                .unwrap_or(default)
        };
        let timeout_ms = either("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
            .and_then(|value| value.parse::<u64>().ok())
            .unwrap_or(10_000);
        let headers = either("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
            .map(|headers| pairs(&headers))
            .unwrap_or_default();
        let compression = match named(
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
            "OTEL_EXPORTER_OTLP_COMPRESSION",
        ) {
            None => Compression::None,
            Some((_, value)) if value.eq_ignore_ascii_case("gzip") => Compression::Gzip,
            Some((_, value)) if value.eq_ignore_ascii_case("none") => Compression::None,
            Some((name, value)) => {
                warnings.push(format!(
                    "{name}={value} is not supported (gzip or none): requests are not compressed"
                ));
                Compression::None
            }
        };
        let file = |traces: &'static str, general: &'static str| {
            named(traces, general).map(|(variable, path)| FileSetting { variable, path })
        };
        let certificate = file(
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
        );
        let client_certificate = file(
            "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
            "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
        );
        let client_key = file(
            "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
            "OTEL_EXPORTER_OTLP_CLIENT_KEY",
        );
        if !endpoint.starts_with("https://") {
            for file in [&certificate, &client_certificate, &client_key]
                .into_iter()
                .flatten()
            {
                warnings.push(format!(
                    "{} is not used: the collector {endpoint} is not https (no TLS)",
                    file.variable
                ));
            }
        }
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
            certificate,
            client_certificate,
            client_key,
            compression,
            retry: Retry::default(),
            warnings,
        })
    }

    /// The collector's endpoint, ready to connect: its URI parsed and, for `https`, the TLS
    /// files read and checked (the CA certificates parse, the client key is the client
    /// certificate's) and the TLS client built. The error names the variable at fault; the
    /// export does not start with it (a collector that can never be reached would only fill
    /// the queue).
    pub fn connection(&self) -> Result<Connection, String> {
        let endpoint = tonic::transport::Endpoint::from_shared(self.endpoint.clone())
            .map_err(|error| {
                format!(
                    "OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT={} is not a usable URI: {}",
                    self.endpoint,
                    error_chain(&error)
                )
            })?
            .timeout(self.timeout)
            .connect_timeout(self.timeout)
            .tcp_nodelay(true);
        if endpoint.uri().scheme_str() != Some("https") {
            return Ok(Connection { endpoint });
        }
        // Roots: the CA file when given, else the system's (rustls-native-certs: the store
        // ca-certificates fills, or SSL_CERT_FILE/SSL_CERT_DIR).
        let mut tls = tonic::transport::ClientTlsConfig::new().timeout(self.timeout);
        tls = match &self.certificate {
            Some(file) => {
                let pem = read(file)?;
                for (index, certificate) in certificates(file, &pem)?.iter().enumerate() {
                    webpki::anchor_from_trusted_cert(certificate).map_err(|error| {
                        format!(
                            "{file}: certificate {} is not a usable CA certificate: {error}",
                            index + 1
                        )
                    })?;
                }
                tls.ca_certificate(tonic::transport::Certificate::from_pem(pem))
            }
            None => tls.with_native_roots(),
        };
        match (&self.client_certificate, &self.client_key) {
            (None, None) => {}
            (Some(certificate), Some(key)) => {
                let (chain_pem, key_pem) = (read(certificate)?, read(key)?);
                let chain = certificates(certificate, &chain_pem)?;
                let private_key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|error| {
                    format!("{key} holds no usable PEM private key (PKCS#8, PKCS#1 or SEC1): {error}")
                })?;
                let provider = rustls::crypto::ring::default_provider();
                rustls::sign::CertifiedKey::from_der(chain, private_key, &provider).map_err(|error| {
                    format!("{key} is not the private key of the certificate in {certificate} ({error})")
                })?;
                tls = tls.identity(tonic::transport::Identity::from_pem(chain_pem, key_pem));
            }
            (Some(set), None) | (None, Some(set)) => {
                return Err(format!(
                    "{set} is set without its pair: a client certificate needs both OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_KEY"
                ));
            }
        }
        let endpoint = endpoint.tls_config(tls).map_err(|error| {
            let roots = match &self.certificate {
                Some(file) => file.to_string(),
                None => {
                    "the system's root certificates (no OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE)".to_owned()
                }
            };
            format!("TLS to {} with {roots}: {}", self.endpoint, error_chain(&error))
        })?;
        Ok(Connection { endpoint })
    }
}

/// A file's bytes; the error names its setting.
fn read(file: &FileSetting) -> Result<Vec<u8>, String> {
    std::fs::read(&file.path).map_err(|error| format!("{file}: cannot read it: {error}"))
}

/// The certificates of a PEM text, at least one; the error names the setting.
fn certificates(file: &FileSetting, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("{file}: not a PEM certificate file: {error}"))?;
    if certificates.is_empty() {
        return Err(format!("{file}: holds no PEM certificate"));
    }
    Ok(certificates)
}

/// An error with its sources (tonic's transport error alone says only "transport error").
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
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

/// The collector's endpoint, checked and ready to connect ([`Settings::connection`]).
#[derive(Clone, Debug)]
pub struct Connection {
    endpoint: tonic::transport::Endpoint,
}

/// The export thread's handle: flushes and stops it.
pub struct Exporter {
    stop: Arc<tokio::sync::Notify>,
    done: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    timeout: Duration,
}

impl Exporter {
    /// Starts the thread that sends `queue`'s batches per `settings` over `connection` (the
    /// settings' own, [`Settings::connection`]), the scope named `scope_name`.
    pub fn start(
        settings: Settings,
        connection: Connection,
        queue: Arc<Queue>,
        scope_name: &str,
    ) -> std::io::Result<Self> {
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
                    runtime.block_on(export_loop(settings, connection, queue, envelope, stopping));
                }
                let _ = done_tx.send(());
            })?;
        Ok(Self {
            stop,
            done: Mutex::new(Some(done)),
            timeout,
        })
    }

    /// Sends what is queued, each batch with one last attempt (no retry), and stops the thread
    /// (waits at most the export timeout and a second).
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
    connection: Connection,
    queue: Arc<Queue>,
    envelope: Envelope,
    stop: Arc<tokio::sync::Notify>,
) {
    let mut client = tonic::client::Grpc::new(connection.endpoint.connect_lazy());
    if settings.compression == Compression::Gzip {
        client = client.send_compressed(tonic::codec::CompressionEncoding::Gzip);
    }
    let mut sender = Sender {
        client,
        metadata: metadata(&settings.headers),
        settings,
        queue,
        envelope,
        stop,
        stopping: false,
        failures: Failures::default(),
        dropped_reported: 0,
    };
    loop {
        if !sender.stopping {
            let stop = Arc::clone(&sender.stop);
            tokio::select! {
                () = tokio::time::sleep(sender.settings.schedule_delay) => {}
                () = sender.queue.full.notified() => {}
                () = stop.notified() => sender.stopping = true,
            }
        }
        let last_round = sender.stopping;
        // The batches queued now, oldest first; the last may still fill while those before it
        // are sent (spans arriving meanwhile wait for the next round, not a batch of their own).
        for _ in 0..sender.queue.batches() {
            let Some(batch) = sender.queue.pop() else {
                break;
            };
            sender.export(batch).await;
            sender.report_dropped();
        }
        sender.report_dropped();
        // Stopped during this round: one more round sends what queued meanwhile.
        if last_round {
            return;
        }
    }
}

/// The export thread's state.
struct Sender {
    client: tonic::client::Grpc<tonic::transport::Channel>,
    metadata: tonic::metadata::MetadataMap,
    settings: Settings,
    queue: Arc<Queue>,
    envelope: Envelope,
    stop: Arc<tokio::sync::Notify>,
    /// Shutdown was asked: no more waiting, one attempt per batch.
    stopping: bool,
    failures: Failures,
    dropped_reported: u64,
}

/// What a failed attempt calls for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// The collector may take the batch later: retry, after the delay it asked for if any.
    Retry(Option<Duration>),
    /// It never will (the request is at fault, or the credentials): drop the batch.
    Drop,
}

/// The OTLP specification's retryable gRPC codes; `RESOURCE_EXHAUSTED` only when the collector
/// says, with a `RetryInfo`, that it will recover. A connection that failed is retried whatever
/// its code: the collector sent nothing, and tonic reports a refused connection as
/// `UNAVAILABLE` but a reset one as `UNKNOWN` ("transport error"), with the transport error as
/// the status's source (a status the collector sent has none).
fn verdict(status: &tonic::Status) -> Verdict {
    use tonic::Code;
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if error.is::<tonic::transport::Error>() {
            return Verdict::Retry(None);
        }
        source = error.source();
    }
    let retry_info = retry_info(status.details());
    match status.code() {
        Code::Cancelled
        | Code::DeadlineExceeded
        | Code::Aborted
        | Code::OutOfRange
        | Code::Unavailable
        | Code::DataLoss => Verdict::Retry(retry_info.flatten()),
        Code::ResourceExhausted if retry_info.is_some() => Verdict::Retry(retry_info.flatten()),
        _ => Verdict::Drop,
    }
}

/// The `google.rpc.RetryInfo` among a status's details (`grpc-status-details-bin`, a
/// `google.rpc.Status`): `None` without one, else the delay it asks for, if any.
fn retry_info(details: &[u8]) -> Option<Option<Duration>> {
    use prost::Message;
    /// `google.rpc.Status`, only its details.
    #[derive(Clone, PartialEq, prost::Message)]
    struct RpcStatus {
        #[prost(message, repeated, tag = "3")]
        details: Vec<prost_types::Any>,
    }
    /// `google.rpc.RetryInfo`.
    #[derive(Clone, PartialEq, prost::Message)]
    struct RetryInfo {
        #[prost(message, optional, tag = "1")]
        retry_delay: Option<prost_types::Duration>,
    }
    if details.is_empty() {
        return None;
    }
    let status = RpcStatus::decode(details).ok()?;
    let info = status.details.iter().find(|any| {
        any.type_url
            .rsplit('/')
            .next()
            .is_some_and(|name| name == "google.rpc.RetryInfo")
    })?;
    let info = RetryInfo::decode(info.value.as_slice()).ok()?;
    Some(info.retry_delay.and_then(|delay| Duration::try_from(delay).ok()))
}

/// A wait drawn between half and all of `backoff`.
fn jittered(backoff: Duration) -> Duration {
    backoff.mul_f64(rand::random_range(0.5..=1.0))
}

impl Sender {
    /// Sends a batch, retrying per [`verdict`] and [`Retry`] until it is taken, refused, or its
    /// retry budget is spent.
    async fn export(&mut self, batch: Batch) {
        let spans = batch.spans;
        let request = Arc::new(Export {
            header: self.envelope.header(batch.bytes.len()),
            spans: batch.bytes,
            queue: Arc::clone(&self.queue),
        });
        let retry = self.settings.retry;
        let started = std::time::Instant::now();
        let mut backoff = retry.initial;
        let mut attempts = 1;
        loop {
            let Err(status) = self.attempt(&request).await else {
                return;
            };
            let wait = match verdict(&status) {
                Verdict::Drop => {
                    self.failures
                        .report(spans, &self.settings.endpoint, &status, "not retryable");
                    return;
                }
                Verdict::Retry(asked) => asked.unwrap_or_else(|| jittered(backoff)),
            };
            if self.stopping || started.elapsed() + wait > retry.budget {
                let why = if self.stopping {
                    "shutting down"
                } else {
                    "retry budget spent"
                };
                self.failures.report(
                    spans,
                    &self.settings.endpoint,
                    &status,
                    &format!(
                        "{why} after {attempts} attempt{}",
                        if attempts == 1 { "" } else { "s" }
                    ),
                );
                return;
            }
            let stop = Arc::clone(&self.stop);
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                // Shutdown: the wait is cut short for one last attempt.
                () = stop.notified() => self.stopping = true,
            }
            backoff = (backoff * 2).min(retry.max);
            attempts += 1;
        }
    }

    /// One `Export` call.
    async fn attempt(&mut self, request: &Arc<Export>) -> Result<(), tonic::Status> {
        let mut call = tonic::Request::new(Outgoing(Arc::clone(request)));
        *call.metadata_mut() = self.metadata.clone();
        call.set_timeout(self.settings.timeout);
        self.client
            .ready()
            .await
            .map_err(|error| tonic::Status::unavailable(error_chain(&error)))?;
        self.client
            .unary::<_, (), _>(call, http::uri::PathAndQuery::from_static(EXPORT_PATH), RawCodec)
            .await
            .map(drop)
    }

    /// Warns of spans the full queue dropped since the last warning.
    fn report_dropped(&mut self) {
        let dropped = self.queue.dropped();
        if dropped > self.dropped_reported {
            tracing::warn!(
                spans = dropped - self.dropped_reported,
                "trace spans dropped: the export queue (OTEL_BSP_MAX_QUEUE_SIZE) was full"
            );
            self.dropped_reported = dropped;
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
    fn report(&mut self, spans: usize, endpoint: &str, status: &tonic::Status, why: &str) {
        self.spans_since += spans;
        let due = self
            .last_report
            .is_none_or(|last| last.elapsed() >= Duration::from_secs(60));
        if due {
            // A failed connection's status says only "transport error": its source says more.
            let error = match std::error::Error::source(status) {
                Some(source) => error_chain(source),
                None => status.message().to_owned(),
            };
            tracing::warn!(
                spans = self.spans_since,
                %endpoint,
                code = ?status.code(),
                %error,
                "trace spans not exported ({why})"
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

/// An export request's bytes: the envelope's header, then a batch of spans, shared by the
/// attempts; the spans' buffer goes back to the queue when the last attempt is done with it.
struct Export {
    header: Vec<u8>,
    spans: Vec<u8>,
    queue: Arc<Queue>,
}

impl Drop for Export {
    fn drop(&mut self) {
        self.queue.recycle(std::mem::take(&mut self.spans));
    }
}

/// One attempt's message.
struct Outgoing(Arc<Export>);

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
        let Outgoing(export) = item;
        dst.reserve(export.header.len() + export.spans.len());
        dst.put_slice(&export.header);
        dst.put_slice(&export.spans);
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
        assert_eq!(settings.compression, Compression::None);
        assert_eq!(settings.retry, Retry::default());
        assert_eq!(
            (
                &settings.certificate,
                &settings.client_certificate,
                &settings.client_key
            ),
            (&None, &None, &None)
        );
        assert!(settings.warnings.is_empty(), "{:?}", settings.warnings);
        // Without a scheme: TLS, as the specification reads an unset INSECURE.
        let bare = Settings::from_env(
            "orders-svc",
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317")]),
        )
        .unwrap();
        assert_eq!(bare.endpoint, "https://collector:4317");
        assert_eq!(bare.resource[0].1, "orders-svc");
        let named = resource("orders-svc", Some("orders-a"), Some("service.name=orders-b"));
        assert_eq!(named[0].1, "orders-a");
    }

    #[test]
    fn tls_compression_and_insecure_settings_follow_the_standard_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        let settings = Settings::from_env(
            "orders-svc",
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4317"),
                ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/otel/ca.pem"),
                ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "/etc/otel/traces-ca.pem"),
                ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/etc/otel/client.pem"),
                ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "/etc/otel/client.key"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "GZIP"),
                // INSECURE applies only to an endpoint without a scheme.
                ("OTEL_EXPORTER_OTLP_INSECURE", "true"),
            ]),
        )
        .unwrap();
        assert_eq!(settings.endpoint, "https://collector:4317");
        assert_eq!(
            settings.certificate,
            Some(FileSetting {
                variable: "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
                path: "/etc/otel/traces-ca.pem".to_owned()
            })
        );
        assert_eq!(
            settings.client_certificate.as_ref().map(|file| file.variable),
            Some("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")
        );
        assert_eq!(
            settings
                .client_key
                .as_ref()
                .map(|file| file.to_string())
                .as_deref(),
            Some("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY=/etc/otel/client.key")
        );
        assert_eq!(settings.compression, Compression::Gzip);
        assert!(settings.warnings.is_empty(), "{:?}", settings.warnings);

        let insecure = Settings::from_env(
            "orders-svc",
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317"),
                ("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "True"),
                ("OTEL_EXPORTER_OTLP_INSECURE", "false"),
                ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ]),
        )
        .unwrap();
        assert_eq!(insecure.endpoint, "http://collector:4317");
        assert_eq!(insecure.compression, Compression::None, "the _TRACES_ form wins");

        // Values not understood: warned about, the defaults used; TLS files beside an http://
        // endpoint are not used, and said so.
        let odd = Settings::from_env(
            "orders-svc",
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"),
                ("OTEL_EXPORTER_OTLP_INSECURE", "yes"),
                ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/otel/ca.pem"),
            ]),
        )
        .unwrap();
        assert_eq!(odd.endpoint, "http://collector:4317");
        assert_eq!(odd.compression, Compression::None);
        assert_eq!(
            odd.warnings,
            [
                "OTEL_EXPORTER_OTLP_INSECURE=yes is neither true nor false: read as false",
                "OTEL_EXPORTER_OTLP_COMPRESSION=zstd is not supported (gzip or none): requests are not compressed",
                "OTEL_EXPORTER_OTLP_CERTIFICATE is not used: the collector http://collector:4317 is not https (no TLS)",
            ]
        );
    }

    #[test]
    fn unusable_collector_settings_are_refused_before_export_starts_naming_the_variable() {
        let dir = std::env::temp_dir().join(format!("lab-otlp-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let not_pem = dir.join("not-a-certificate.pem");
        std::fs::write(&not_pem, "hello").unwrap();
        let garbage = dir.join("garbage.pem");
        std::fs::write(
            &garbage,
            "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let missing = dir.join("missing.pem");
        let refused = |pairs: Vec<(&'static str, String)>| {
            Settings::from_env("orders-svc", move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.clone())
            })
            .unwrap()
            .connection()
            .expect_err("refused")
        };
        let https = ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4317".to_owned());
        let path = |path: &std::path::Path| path.display().to_string();

        let error = refused(vec![
            https.clone(),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", path(&missing)),
        ]);
        assert!(
            error.starts_with(&format!(
                "OTEL_EXPORTER_OTLP_CERTIFICATE={}: cannot read it",
                path(&missing)
            )),
            "{error}"
        );
        let error = refused(vec![
            https.clone(),
            ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", path(&not_pem)),
        ]);
        assert_eq!(
            error,
            format!(
                "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE={}: holds no PEM certificate",
                path(&not_pem)
            )
        );
        let error = refused(vec![
            https.clone(),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", path(&garbage)),
        ]);
        assert!(
            error.starts_with(&format!(
                "OTEL_EXPORTER_OTLP_CERTIFICATE={}: certificate 1 is not a usable CA certificate",
                path(&garbage)
            )),
            "{error}"
        );
        let error = refused(vec![
            https.clone(),
            ("OTEL_EXPORTER_OTLP_CLIENT_KEY", path(&not_pem)),
        ]);
        assert!(
            error.starts_with(&format!(
                "OTEL_EXPORTER_OTLP_CLIENT_KEY={} is set without its pair",
                path(&not_pem)
            )),
            "{error}"
        );
        let error = refused(vec![(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://collector:43 17".to_owned(),
        )]);
        assert!(
            error.starts_with(
                "OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT=http://collector:43 17 is not a usable URI"
            ),
            "{error}"
        );
        // http:// reads no file.
        Settings::from_env("orders-svc", |name: &str| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://collector:4317".to_owned()),
            "OTEL_EXPORTER_OTLP_CERTIFICATE" => Some(path(&missing)),
            _ => None,
        })
        .unwrap()
        .connection()
        .expect("plaintext needs no file");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn retryable_answers_are_those_of_the_specification_and_retry_info_sets_the_wait() {
        use prost::Message;
        use tonic::Code;
        for code in [
            Code::Cancelled,
            Code::DeadlineExceeded,
            Code::Aborted,
            Code::OutOfRange,
            Code::Unavailable,
            Code::DataLoss,
        ] {
            assert_eq!(
                verdict(&tonic::Status::new(code, "")),
                Verdict::Retry(None),
                "{code:?}"
            );
        }
        for code in [
            Code::Unknown,
            Code::InvalidArgument,
            Code::NotFound,
            Code::AlreadyExists,
            Code::PermissionDenied,
            Code::ResourceExhausted,
            Code::FailedPrecondition,
            Code::Unimplemented,
            Code::Internal,
            Code::Unauthenticated,
        ] {
            assert_eq!(verdict(&tonic::Status::new(code, "")), Verdict::Drop, "{code:?}");
        }
        // google.rpc.Status { details: [Any { RetryInfo { retry_delay: 1.5 s } }] }, encoded
        // with prost's well-known types.
        let retry_info = prost_types::Any {
            type_url: "type.googleapis.com/google.rpc.RetryInfo".to_owned(),
            value: {
                let delay = prost_types::Duration {
                    seconds: 1,
                    nanos: 500_000_000,
                };
                let mut value = Vec::new();
                bytes_field(&mut value, 1, &delay.encode_to_vec());
                value
            },
        };
        let mut details = Vec::new();
        varint_field(&mut details, 1, Code::ResourceExhausted as u64);
        bytes_field(&mut details, 3, &retry_info.encode_to_vec());
        let status = tonic::Status::with_details(Code::ResourceExhausted, "quota", details.into());
        assert_eq!(
            verdict(&status),
            Verdict::Retry(Some(Duration::from_millis(1500)))
        );
        let status = tonic::Status::with_details(Code::Unavailable, "", vec![0xff, 0x01].into());
        assert_eq!(
            verdict(&status),
            Verdict::Retry(None),
            "details that do not decode"
        );
    }

    #[test]
    fn a_popped_batch_leaves_room_while_the_batches_behind_it_still_count() {
        let queue = Queue::new(2, 4);
        let span = |buf: &mut Vec<u8>| bytes_field(buf, 5, b"a span");
        for _ in 0..5 {
            queue.push(span);
        }
        assert_eq!((queue.batches(), queue.dropped()), (2, 1));
        assert_eq!(queue.pop().map(|batch| batch.spans), Some(2));
        queue.push(span);
        queue.push(span);
        queue.push(span);
        assert_eq!(queue.dropped(), 2, "two spans of room, not four");
        assert_eq!(
            std::iter::from_fn(|| queue.pop())
                .map(|batch| batch.spans)
                .collect::<Vec<_>>(),
            [2, 2]
        );
        assert!(queue.pop().is_none());
    }

    #[test]
    fn jittered_waits_fall_between_half_and_all_of_the_backoff() {
        for _ in 0..100 {
            let wait = jittered(Duration::from_secs(4));
            assert!(
                wait >= Duration::from_secs(2) && wait <= Duration::from_secs(4),
                "{wait:?}"
            );
        }
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
