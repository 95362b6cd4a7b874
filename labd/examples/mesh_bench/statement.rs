//! The read's own statement without the mesh: orders-svc's read-model lookup `find_view` (what
//! `GetOrderView` runs) through sqlx from as many tasks as pooled connections, in this process,
//! on the mesh's database. It shows how far `GET /orders/{id}` is from what its database work
//! alone allows.

use crate::machine;
use crate::report::Row;
use crate::seed::Bench;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Runs `find_view` from `connections` tasks for `duration` and returns its row.
pub async fn statement_row(bench: &Bench, connections: u32, duration: Duration) -> anyhow::Result<Row> {
    let url = secrecy::SecretString::from(bench.database_url.clone());
    let pool = platform::db::connect(&url, connections).await?;
    let customer_id: Uuid = bench.customer_id.parse()?;
    let reference = bench.order_id.clone();
    let database_before = bench.database_cpu().await;
    let before = machine::sample();
    let end = Instant::now() + duration;
    let loops = (0..connections).map(|_| {
        let (pool, reference) = (pool.clone(), reference.clone());
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < end {
                let began = Instant::now();
                let mut connection = pool.acquire().await?;
                orders_svc::repo::view::find_view(&mut connection, customer_id, &reference).await?;
                latencies.push(began.elapsed());
            }
            Ok::<_, sqlx::Error>(latencies)
        })
    });
    let mut latencies = Vec::new();
    for joined in futures::future::join_all(loops).await {
        latencies.append(&mut joined??);
    }
    let usage = machine::sample().usage_since(&before);
    let database_cpu = bench.database_cpu().await - database_before;
    pool.close().await;
    latencies.sort();
    let percentile = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map(|latency| latency.as_secs_f64() * 1000.0)
    };
    Ok(Row {
        label: format!("its statement alone (find_view via sqlx) ×{connections}"),
        unit: "queries/s",
        rate: latencies.len() as f64 / usage.seconds,
        count: latencies.len() as f64,
        p50_ms: percentile(0.50),
        p99_ms: percentile(0.99),
        average_ms: None,
        errors: 0,
        usage,
        database_cpu_seconds: Some(database_cpu),
    })
}
