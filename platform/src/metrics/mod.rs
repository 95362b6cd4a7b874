//! The process's Prometheus metrics: one registry per process, the metric families every part of
//! the mesh records into, and the HTTP endpoint (`GET /metrics`, OpenMetrics text) on the
//! process's internal metrics port.
//!
//! Names follow Prometheus conventions (base units, `_total` counters, `_seconds` histograms) and
//! label names follow the OpenTelemetry semantic conventions with dots as underscores
//! (`rpc_method`, `http_route`, …). Counters and histograms are recorded where things happen
//! (the gRPC server layer [`layer::RpcMetricsLayer`], the gateway's HTTP layer, the outbox relay,
//! the stream consumers, webhook deliveries). Values that are a state rather than an event
//! (pool use, outbox backlog, consumer lag and pending entries, dead-letter stream lengths) are
//! read when Prometheus scrapes, by the refreshers the running parts register with
//! [`on_scrape`]: nothing is sampled while nobody scrapes. The one exception is the stablecoin
//! rail's chain-mismatch gauge, moved by the rail's own `eth_chainId` checks (it asks the
//! providers before every pass anyway; a scrape must not call a paid RPC provider).
//!
//! `docs/operations.md` lists every metric, and `deploy/prometheus/alerts.yaml` the alerts built
//! on them.

pub mod endpoint;
pub mod layer;
mod refresh;
pub mod streams;

pub use endpoint::{MetricsEndpoint, encode};
pub use refresh::{Registration, on_scrape, refresh};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use std::sync::LazyLock;
use std::sync::atomic::AtomicU64;

/// Latency buckets in seconds: 0.25 ms to about 16 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_25, 2.0, 17))
}

/// Lag buckets in seconds: 1 ms to about 65 s, doubling (outbox publish lag).
fn lag_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;
type SecondsGauge = Gauge<f64, AtomicU64>;

/// One gRPC call answered by a server of this process.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RpcLabels {
    /// Fully qualified service, e.g. `lab.orders.v1.Orders`.
    pub rpc_service: String,
    /// Method name, e.g. `GetOrder`.
    pub rpc_method: String,
    /// Numeric gRPC status code (0 = OK).
    pub rpc_grpc_status_code: u16,
}

/// The operation of a gRPC call, without its outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RpcMethodLabels {
    pub rpc_service: String,
    pub rpc_method: String,
}

/// One HTTP request answered by the gateway.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    pub http_request_method: String,
    /// The route template (`/api/v1/agent/orders/{reference}`), never the concrete path.
    pub http_route: String,
    pub http_response_status_code: u16,
}

/// The operation of an HTTP request, without its outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpRouteLabels {
    pub http_request_method: String,
    pub http_route: String,
}

/// A service of the mesh (`orders-svc`, …).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServiceLabels {
    pub service: String,
}

/// A service's database pool connections in one state (`idle` or `used`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolLabels {
    pub service: String,
    pub state: &'static str,
}

/// A consumer group reading one stream.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLabels {
    pub stream: String,
    pub group: String,
}

/// What became of a consumed event: `applied`, `retry` (left pending) or `dead_lettered`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConsumedLabels {
    pub stream: String,
    pub group: String,
    pub outcome: &'static str,
}

/// Why a consumer refused an entry's signature (`crate::event_signing::Rejection::reason`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RejectedLabels {
    pub stream: String,
    pub group: String,
    pub reason: &'static str,
}

/// A dead-letter stream (`<stream>:dead`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StreamLabels {
    pub stream: String,
}

/// The outcome of one webhook delivery attempt: `delivered`, `failed` (another attempt follows),
/// `exhausted` (the retry schedule ended) or `gone` (the endpoint answered 410).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabels {
    pub outcome: &'static str,
}

/// A payment's settlement step on one rail (`bank`, `card`, `stablecoin`) and what it came to:
/// `paid` (the invoice or pickup settled), `declined`, `refund_due` (captured after the invoice
/// was settled otherwise or the link expired), `expired` (a link or request ended unpaid), and on
/// the stablecoin rail `observed`, `confirmed` and `reorged`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SettlementLabels {
    pub rail: &'static str,
    pub outcome: &'static str,
}

/// One of the stablecoin rail's two RPC providers: `a` or `b`, as in `PAYMENTS_CHAIN_RPC_URL_A`
/// and `_B` (their configured names are free text: they stay in the logs, not in labels).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChainProviderLabels {
    pub provider: &'static str,
}

/// Every metric family of the mesh (a process records only the ones of the parts it runs).
pub struct Metrics {
    registry: Registry,
    pub rpc_server_requests: Family<RpcLabels, Counter>,
    pub rpc_server_duration: HistogramFamily<RpcMethodLabels>,
    pub http_server_requests: Family<HttpLabels, Counter>,
    pub http_server_duration: HistogramFamily<HttpRouteLabels>,
    pub db_connections: Family<PoolLabels, Gauge>,
    pub db_connections_max: Family<ServiceLabels, Gauge>,
    pub outbox_backlog: Family<ServiceLabels, Gauge>,
    pub outbox_oldest_age: Family<ServiceLabels, SecondsGauge>,
    pub outbox_published: Family<ServiceLabels, Counter>,
    pub outbox_publish_lag: HistogramFamily<ServiceLabels>,
    pub consumer_pending: Family<GroupLabels, Gauge>,
    pub consumer_lag: Family<GroupLabels, Gauge>,
    pub events_consumed: Family<ConsumedLabels, Counter>,
    pub events_rejected: Family<RejectedLabels, Counter>,
    pub dead_letter_entries: Family<StreamLabels, Gauge>,
    pub webhook_deliveries: Family<DeliveryLabels, Counter>,
    pub webhook_delivery_duration: HistogramFamily<DeliveryLabels>,
    pub payment_settlements: Family<SettlementLabels, Counter>,
    pub stablecoin_chain_mismatch: Family<ChainProviderLabels, Gauge>,
    /// When the gRPC TLS certificate a process loaded at start expires (Unix seconds).
    pub grpc_tls_certificate_expiry: Family<ServiceLabels, Gauge>,
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::default();
        let metrics = Self {
            registry: Registry::default(),
            rpc_server_requests: Family::default(),
            rpc_server_duration: Family::new_with_constructor(latency_histogram),
            http_server_requests: Family::default(),
            http_server_duration: Family::new_with_constructor(latency_histogram),
            db_connections: Family::default(),
            db_connections_max: Family::default(),
            outbox_backlog: Family::default(),
            outbox_oldest_age: Family::default(),
            outbox_published: Family::default(),
            outbox_publish_lag: Family::new_with_constructor(lag_histogram),
            consumer_pending: Family::default(),
            consumer_lag: Family::default(),
            events_consumed: Family::default(),
            events_rejected: Family::default(),
            dead_letter_entries: Family::default(),
            webhook_deliveries: Family::default(),
            webhook_delivery_duration: Family::new_with_constructor(latency_histogram),
            payment_settlements: Family::default(),
            stablecoin_chain_mismatch: Family::default(),
            grpc_tls_certificate_expiry: Family::default(),
        };
        registry.register(
            "rpc_server_requests",
            "gRPC calls answered by this process's servers, by method and status code",
            metrics.rpc_server_requests.clone(),
        );
        registry.register_with_unit(
            "rpc_server_duration",
            "Time from a gRPC call's arrival to its answer's headers, by method",
            Unit::Seconds,
            metrics.rpc_server_duration.clone(),
        );
        registry.register(
            "http_server_requests",
            "HTTP requests answered by the gateway, by route template and status code",
            metrics.http_server_requests.clone(),
        );
        registry.register_with_unit(
            "http_server_request_duration",
            "Time from an HTTP request's arrival to its answer's headers, by route template",
            Unit::Seconds,
            metrics.http_server_duration.clone(),
        );
        registry.register(
            "db_client_connections",
            "Open database pool connections of a service, by state (idle, used)",
            metrics.db_connections.clone(),
        );
        registry.register(
            "db_client_connections_max",
            "Largest database pool of a service",
            metrics.db_connections_max.clone(),
        );
        registry.register(
            "outbox_backlog_events",
            "Events committed to a service's outbox and not yet published to its stream",
            metrics.outbox_backlog.clone(),
        );
        registry.register_with_unit(
            "outbox_oldest_unpublished_age",
            "Age of the oldest unpublished outbox event (0 when none waits)",
            Unit::Seconds,
            metrics.outbox_oldest_age.clone(),
        );
        registry.register(
            "outbox_published_events",
            "Outbox events published to the service's stream",
            metrics.outbox_published.clone(),
        );
        registry.register_with_unit(
            "outbox_publish_lag",
            "Time from an event's commit to its publication on the stream",
            Unit::Seconds,
            metrics.outbox_publish_lag.clone(),
        );
        registry.register(
            "stream_consumer_pending_entries",
            "Entries delivered to a consumer group and not yet acknowledged",
            metrics.consumer_pending.clone(),
        );
        registry.register(
            "stream_consumer_lag_entries",
            "Entries of a stream not yet delivered to a consumer group",
            metrics.consumer_lag.clone(),
        );
        registry.register(
            "stream_events_consumed",
            "Events handled by a consumer group, by outcome (applied, retry, dead_lettered)",
            metrics.events_consumed.clone(),
        );
        registry.register(
            "stream_events_rejected",
            "Entries a consumer group refused because their signature is missing, unknown, wrong or not the stream owner's (dead-lettered unapplied)",
            metrics.events_rejected.clone(),
        );
        registry.register(
            "stream_dead_letter_entries",
            "Entries in a dead-letter stream",
            metrics.dead_letter_entries.clone(),
        );
        registry.register(
            "webhook_deliveries",
            "Webhook delivery attempts, by outcome (delivered, failed, exhausted, gone)",
            metrics.webhook_deliveries.clone(),
        );
        registry.register_with_unit(
            "webhook_delivery_duration",
            "Time of one webhook delivery attempt, by outcome",
            Unit::Seconds,
            metrics.webhook_delivery_duration.clone(),
        );
        registry.register(
            "payment_settlements",
            "Payment settlement steps committed by payments-svc, by rail and outcome",
            metrics.payment_settlements.clone(),
        );
        registry.register(
            "stablecoin_chain_mismatch",
            "Stablecoin rails of this process halted because this provider's eth_chainId is not the configured chain (1 while a deployment's rail is halted, else 0)",
            metrics.stablecoin_chain_mismatch.clone(),
        );
        registry.register_with_unit(
            "grpc_tls_certificate_expiry_timestamp",
            "When the gRPC TLS certificate the process loaded at start expires (Unix time); a renewed certificate takes effect at the next restart",
            Unit::Seconds,
            metrics.grpc_tls_certificate_expiry.clone(),
        );
        Self { registry, ..metrics }
    }

    /// The registry every family is registered in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process's metrics.
pub fn metrics() -> &'static Metrics {
    &METRICS
}

/// Counts `count` settlement steps of `rail` with `outcome` (after their transaction
/// committed).
pub fn record_settlements(rail: &'static str, outcome: &'static str, count: u64) {
    if count > 0 {
        metrics()
            .payment_settlements
            .get_or_create(&SettlementLabels { rail, outcome })
            .inc_by(count);
    }
}

/// Exports the chain-mismatch gauge of stablecoin provider `provider` (`a` or `b`) without
/// changing it: a process running the rail has the sample, at 0 until a rail is halted.
pub fn expose_chain_mismatch(provider: &'static str) {
    // A family shows the samples it holds: creating it is enough.
    let _sample = metrics()
        .stablecoin_chain_mismatch
        .get_or_create(&ChainProviderLabels { provider });
}

/// Counts one rail more (`halted`) or one fewer (`!halted`) halted because `provider` serves
/// another chain; the caller records transitions only, so the gauge is the number of halted
/// rails (one rail per deployment: 0 or 1).
pub fn record_chain_mismatch(provider: &'static str, halted: bool) {
    let gauge = metrics()
        .stablecoin_chain_mismatch
        .get_or_create(&ChainProviderLabels { provider });
    if halted {
        gauge.inc();
    } else {
        gauge.dec();
    }
}

/// Records the sizes of a service's database pool (a refresher for [`on_scrape`]).
pub fn record_pool(service: &str, pool: &sqlx::PgPool) {
    let size = i64::from(pool.size());
    let idle = i64::try_from(pool.num_idle()).unwrap_or(i64::MAX);
    let metrics = metrics();
    let labels = |state| PoolLabels {
        service: service.to_owned(),
        state,
    };
    metrics.db_connections.get_or_create(&labels("idle")).set(idle);
    metrics
        .db_connections
        .get_or_create(&labels("used"))
        .set((size - idle).max(0));
    metrics
        .db_connections_max
        .get_or_create(&ServiceLabels {
            service: service.to_owned(),
        })
        .set(i64::from(pool.options().get_max_connections()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_exposed_with_prometheus_names_and_units() {
        // A family shows in the exposition once it has a sample.
        let metrics = metrics();
        let method = RpcMethodLabels {
            rpc_service: "lab.test.v1.Test".into(),
            rpc_method: "Get".into(),
        };
        metrics
            .rpc_server_requests
            .get_or_create(&RpcLabels {
                rpc_service: method.rpc_service.clone(),
                rpc_method: method.rpc_method.clone(),
                rpc_grpc_status_code: 0,
            })
            .inc();
        metrics.rpc_server_duration.get_or_create(&method).observe(0.001);
        let route = HttpRouteLabels {
            http_request_method: "GET".into(),
            http_route: "/test".into(),
        };
        metrics.http_server_duration.get_or_create(&route).observe(0.001);
        let service = ServiceLabels {
            service: "test-svc".into(),
        };
        metrics
            .db_connections
            .get_or_create(&PoolLabels {
                service: "test-svc".into(),
                state: "idle",
            })
            .set(1);
        metrics.outbox_backlog.get_or_create(&service).set(0);
        metrics.outbox_oldest_age.get_or_create(&service).set(0.5);
        metrics.outbox_publish_lag.get_or_create(&service).observe(0.01);
        let group = GroupLabels {
            stream: "test:events:orders".into(),
            group: "test-svc".into(),
        };
        metrics.consumer_pending.get_or_create(&group).set(0);
        metrics.consumer_lag.get_or_create(&group).set(0);
        metrics
            .events_consumed
            .get_or_create(&ConsumedLabels {
                stream: group.stream.clone(),
                group: group.group.clone(),
                outcome: "applied",
            })
            .inc();
        metrics
            .dead_letter_entries
            .get_or_create(&StreamLabels {
                stream: "test:events:orders:dead".into(),
            })
            .set(0);
        expose_chain_mismatch("a");
        let delivered = DeliveryLabels { outcome: "delivered" };
        metrics.webhook_deliveries.get_or_create(&delivered).inc();
        metrics
            .webhook_delivery_duration
            .get_or_create(&delivered)
            .observe(0.2);
        let text = encode();
        for name in [
            "# TYPE rpc_server_requests counter",
            "rpc_server_requests_total{rpc_service=\"lab.test.v1.Test\",rpc_method=\"Get\",rpc_grpc_status_code=\"0\"} ",
            "# TYPE rpc_server_duration_seconds histogram",
            "# UNIT rpc_server_duration_seconds seconds",
            "# TYPE http_server_request_duration_seconds histogram",
            "# TYPE db_client_connections gauge",
            "# TYPE outbox_backlog_events gauge",
            "# TYPE outbox_oldest_unpublished_age_seconds gauge",
            "# TYPE outbox_publish_lag_seconds histogram",
            "# TYPE stream_consumer_pending_entries gauge",
            "# TYPE stream_consumer_lag_entries gauge",
            "# TYPE stream_events_consumed counter",
            "# TYPE stream_dead_letter_entries gauge",
            "# TYPE webhook_deliveries counter",
            "# TYPE webhook_delivery_duration_seconds histogram",
            "# TYPE stablecoin_chain_mismatch gauge",
            "stablecoin_chain_mismatch{provider=\"a\"} ",
        ] {
            assert!(text.contains(name), "missing {name:?} in\n{text}");
        }
        assert!(
            text.ends_with("# EOF\n"),
            "an OpenMetrics exposition ends with # EOF"
        );
    }
}
