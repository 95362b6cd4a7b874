//! Test utilities (feature `testing`): fresh databases, unique stream prefixes, polling for what
//! must happen ([`wait_for`]) and for what must not ([`holds_for`], [`nothing_more_arrives`]),
//! reading a schema's outbox and a stream's entries ([`events`]), and identity-svc's API as a
//! test's admin calls it ([`identity`]: customers and API keys), and with `blobs` real S3 servers:
//! [`s3rver`], and [`ministack`], which verifies SigV4 presigned URLs; [`smtp`] is a real SMTP
//! server (PyPI `aiosmtpd`) delivering into a Maildir.
//!
//! Tests run against the real PostgreSQL and Redis named by `TEST_DATABASE_URL` (an admin URL,
//! default `postgres://postgres@127.0.0.1:5432/postgres`) and `TEST_REDIS_URL` (default
//! `redis://127.0.0.1:6379`); the README's test command starts them when missing. No test sleeps
//! to let something happen or to prove that it does not: it polls.

pub mod events;
pub mod identity;
#[cfg(feature = "blobs")]
pub mod ministack;
pub mod pki;
#[cfg(feature = "blobs")]
pub mod s3rver;
pub mod smtp;

use sqlx::{AssertSqlSafe, Connection, PgConnection};
use std::future::Future;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Databases created by tests older than this are dropped by later test runs.
const STALE_AFTER_SECS: u64 = 6 * 3600;

/// The admin URL of the test PostgreSQL server.
pub fn admin_database_url() -> String {
    crate::config::env_var("TEST_DATABASE_URL")
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// The URL of the test Redis.
pub fn redis_url() -> String {
    crate::config::env_var("TEST_REDIS_URL").unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned())
}

/// A stream prefix no other test uses.
pub fn unique_stream_prefix() -> String {
    format!("test-{}", Uuid::new_v4().simple())
}

/// The migration 0001 every service carried before the platform tables moved to `platform`
/// (`db::PLATFORM_TABLES` without `IF NOT EXISTS` and without creating the schema), for `schema`:
/// what a schema migrated by those builds has.
pub fn former_platform_migration(schema: &str) -> String {
    crate::db::PLATFORM_TABLES
        .lines()
        .filter(|line| !line.starts_with("CREATE SCHEMA"))
        .collect::<Vec<_>>()
        .join("\n")
        .replace(" IF NOT EXISTS", "")
        .replace("{schema}", schema)
}

/// Creates a fresh, empty database and returns its URL. Drops databases that earlier runs left.
pub async fn fresh_database() -> String {
    let admin_url = admin_database_url();
    let mut admin = PgConnection::connect(&admin_url)
        .await
        .expect("connect to TEST_DATABASE_URL");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    drop_stale_databases(&mut admin, now).await;
    let name = format!("t_{now}_{}", Uuid::new_v4().simple());
    sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut admin)
        .await
        .expect("create a test database");
    let base = admin_url
        .rsplit_once('/')
        .map(|(base, _)| base.to_owned())
        .unwrap_or(admin_url);
    format!("{base}/{name}")
}

async fn drop_stale_databases(admin: &mut PgConnection, now: u64) {
    let names: Vec<String> = sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 't\\_%'")
        .fetch_all(&mut *admin)
        .await
        .unwrap_or_default();
    for name in names {
        let created = name.split('_').nth(1).and_then(|stamp| stamp.parse::<u64>().ok());
        if created.is_some_and(|created| now.saturating_sub(created) > STALE_AFTER_SECS) {
            let statement = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
            let _ = sqlx::raw_sql(AssertSqlSafe(statement)).execute(&mut *admin).await;
        }
    }
}

/// Polls `probe` until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Polls `probe` for the whole `window` and panics, naming `what`, at the first poll where it no
/// longer holds: "this stays true" without a blind sleep that would miss a late change.
pub async fn holds_for<F, Fut>(what: &str, window: Duration, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        assert!(
            probe().await,
            "{what} stopped holding after {:?}",
            started.elapsed()
        );
        if started.elapsed() >= window {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Asserts that nothing more arrives for `window`: `count` (requests received, entries of a
/// stream, rows) is read at once and polled for the whole window, and the first change fails,
/// naming `what` and the counts.
pub async fn nothing_more_arrives<F, Fut>(what: &str, window: Duration, mut count: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = usize>,
{
    let before = count().await;
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(25)).await;
        let now = count().await;
        assert_eq!(
            now,
            before,
            "{what}: the count went from {before} to {now} after {:?}",
            started.elapsed()
        );
        if started.elapsed() >= window {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn nothing_more_arrives_passes_a_quiet_window() {
        nothing_more_arrives("anything", Duration::from_millis(100), || async { 3 }).await;
    }

    #[tokio::test]
    #[should_panic(expected = "a late arrival: the count went from 0 to 1")]
    async fn nothing_more_arrives_fails_at_a_late_arrival() {
        let arrived = Arc::new(AtomicUsize::new(0));
        let late = arrived.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            late.fetch_add(1, Ordering::SeqCst);
        });
        nothing_more_arrives("a late arrival", Duration::from_millis(400), || {
            let arrived = arrived.clone();
            async move { arrived.load(Ordering::SeqCst) }
        })
        .await;
    }
}
