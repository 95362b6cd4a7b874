//! Helpers of the event-guarantee tests: a schema with the event tables, a handler that counts
//! what it applies, event builders, and a Redis process of the test's own.

use platform::consumer::{Consumed, EventHandler, HandlerError, first_delivery};
use platform::outbox::NewEvent;
use proto::events::EventEnvelope;
use proto::events::event_envelope::Data;
use sqlx::PgPool;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use uuid::Uuid;

pub use platform::event_signing::{EventSigner, EventVerifier};
pub use platform::testing::events::{
    dead_letters, pending_count, redis_connection, stream_envelopes, unpublished, xadd,
};
pub use platform::testing::{holds_for, nothing_more_arrives, unique_stream_prefix, wait_for};

/// Schema of the event tables these tests create.
pub const SCHEMA: &str = "eventtest";

/// A fresh database with `eventtest.outbox`, `processed_events` and `effects` (one row per
/// applied event id, counting applications).
pub async fn pool_with_event_tables() -> PgPool {
    let url = platform::testing::fresh_database().await;
    let pool = PgPool::connect(&url).await.unwrap();
    sqlx::raw_sql(
        "CREATE SCHEMA eventtest;
         CREATE TABLE eventtest.outbox (id BIGSERIAL PRIMARY KEY, event_id UUID NOT NULL UNIQUE,
           event_type TEXT NOT NULL, envelope BYTEA NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
           published_at TIMESTAMPTZ);
         CREATE TABLE eventtest.processed_events (consumer TEXT NOT NULL, event_id UUID NOT NULL,
           processed_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (consumer, event_id));
         CREATE TABLE eventtest.effects (event_id UUID PRIMARY KEY, applied INT NOT NULL);",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool
}

/// A stream of the orders domain under a prefix no other test uses.
pub fn orders_stream() -> String {
    platform::streams::stream_name(&unique_stream_prefix(), platform::streams::ORDERS)
}

/// An `order.created` envelope with a fresh id, claiming `source`.
pub fn envelope_from(source: &str) -> EventEnvelope {
    EventEnvelope {
        id: Uuid::now_v7().to_string(),
        r#type: "order.created".into(),
        source: source.into(),
        ..Default::default()
    }
}

/// An `order.status_changed` event of `order`, for the outbox.
pub fn status_changed(order: &str) -> NewEvent {
    NewEvent {
        event_type: "order.status_changed",
        customer_id: Uuid::new_v4(),
        subject_id: order.to_owned(),
        data: Data::OrderStatusChanged(proto::orders::OrderStatusChanged {
            order_id: order.to_owned(),
            order_number: "ORD-2026-000001".into(),
            from_status: proto::common::OrderStatus::InvoiceSent as i32,
            legacy_from_status: "invoice_sent".into(),
            to_status: proto::common::OrderStatus::Paid as i32,
            legacy_to_status: "paid".into(),
            changed_at: "2026-11-22T00:00:00Z".into(),
            reason: "payment.confirmed".into(),
        }),
    }
}

/// An `order.created` event of the `n`th order, for the outbox.
pub fn order_created(n: usize) -> NewEvent {
    NewEvent {
        event_type: "order.created",
        customer_id: Uuid::new_v4(),
        subject_id: format!("order-{n}"),
        data: Data::OrderCreated(proto::orders::OrderCreated {
            order_id: format!("order-{n}"),
            ..Default::default()
        }),
    }
}

/// Applies an event by counting it in `effects`, idempotently; counts invocations and the size
/// of every batch it was handed.
pub struct CountingHandler {
    pub pool: PgPool,
    pub invocations: AtomicUsize,
    pub batches: Mutex<Vec<usize>>,
}

impl CountingHandler {
    pub fn new(pool: &PgPool) -> Self {
        Self {
            pool: pool.clone(),
            invocations: AtomicUsize::new(0),
            batches: Mutex::new(Vec::new()),
        }
    }

    /// How many distinct events were applied.
    pub async fn applied(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM eventtest.effects")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// How many times the event `event_id` was applied, if at all.
    pub async fn applications_of(&self, event_id: Uuid) -> Option<i32> {
        sqlx::query_scalar("SELECT applied FROM eventtest.effects WHERE event_id = $1")
            .bind(event_id)
            .fetch_optional(&self.pool)
            .await
            .unwrap()
    }
}

impl EventHandler for CountingHandler {
    async fn handle(&self, event: &EventEnvelope) -> Result<(), HandlerError> {
        self.invocations.fetch_add(1, Ordering::SeqCst);
        let mut tx = self.pool.begin().await?;
        if first_delivery(&mut tx, SCHEMA, "counting", &event.id).await? {
            let id = Uuid::parse_str(&event.id).map_err(|error| HandlerError::Permanent(error.into()))?;
            apply(&mut tx, id).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn handle_batch(&self, batch: &[Consumed]) -> Vec<Result<(), HandlerError>> {
        self.batches.lock().unwrap().push(batch.len());
        let mut outcomes = Vec::with_capacity(batch.len());
        for consumed in batch {
            outcomes.push(self.handle(&consumed.envelope).await);
        }
        outcomes
    }
}

/// Counts one application of `event_id` in `effects`.
pub async fn apply(tx: &mut sqlx::PgConnection, event_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO eventtest.effects (event_id, applied) VALUES ($1, 1)
         ON CONFLICT (event_id) DO UPDATE SET applied = eventtest.effects.applied + 1",
    )
    .bind(event_id)
    .execute(tx)
    .await
    .map(|_| ())
}

/// A Redis server process of this test, on its own port, killed when dropped.
pub struct RedisProcess(std::process::Child);

impl RedisProcess {
    pub fn start(port: u16) -> Self {
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed (the README's test command installs it)");
        Self(child)
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port nothing listens on (yet).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
