//! Connections to the stores: creates the database when missing (a newcomer's first run),
//! connects a pool, runs a service's embedded migrations (each crate's `sqlx.toml` places the
//! migrations table inside the service's own schema), and opens Redis clients.
//!
//! `TCP_NODELAY`: Redis clients set it here (redis-rs leaves it off). sqlx 0.9.0 neither sets
//! it nor offers a hook (upstream issue transact-rs/sqlx#4335, fixed after 0.9.0); it writes
//! each request in one flush and then reads, so Nagle's algorithm has no unacknowledged data
//! to wait on, and the benchmark (docs/performance.md) shows no 40 ms stall on that hop.

use secrecy::{ExposeSecret, SecretString};
use sqlx::ConnectOptions;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::str::FromStr;
use std::time::Duration;

/// Connects a pool to `url`, creating the database first when it does not exist.
pub async fn connect(url: &SecretString, max_connections: u32) -> anyhow::Result<PgPool> {
    let options = connect_options(url.expose_secret())?;
    ensure_database(&options).await?;
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await?;
    Ok(pool)
}

/// The options a pool connects with for `url`.
pub fn connect_options(url: &str) -> Result<PgConnectOptions, sqlx::Error> {
    Ok(PgConnectOptions::from_str(url)?
        .log_statements(tracing::log::LevelFilter::Trace)
        .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_secs(1)))
}

/// Creates the database named in `options` when it is missing (tolerating a concurrent creator).
pub async fn ensure_database(options: &PgConnectOptions) -> anyhow::Result<()> {
    let Some(name) = options.get_database().map(str::to_owned) else {
        return Ok(());
    };
    let admin = options.clone().database("postgres");
    let mut connection = admin.connect().await?;
    let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_optional(&mut connection)
        .await?;
    if exists.is_none() {
        let statement = format!("CREATE DATABASE \"{}\"", name.replace('"', "\"\""));
        if let Err(error) = sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut connection)
            .await
        {
            let duplicate = matches!(&error, sqlx::Error::Database(db) if matches!(db.code().as_deref(), Some("42P04") | Some("23505")));
            if !duplicate {
                return Err(error.into());
            }
        }
    }
    Ok(())
}

/// Runs a service's embedded migrations.
pub async fn migrate(pool: &PgPool, migrator: &Migrator) -> anyhow::Result<()> {
    migrator.run(pool).await?;
    Ok(())
}

/// Opens a Redis client whose connections set `TCP_NODELAY`.
///
/// Why: a multiplexed connection writes a command while the previous one may still be
/// unacknowledged, and Nagle's algorithm would hold the small write until a delayed ACK.
pub fn redis_client(url: &str) -> redis::RedisResult<redis::Client> {
    let info = redis::IntoConnectionInfo::into_connection_info(url)?
        .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
    redis::Client::open(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_clients_set_tcp_nodelay() {
        let client = redis_client("redis://127.0.0.1:6379/0").unwrap();
        assert!(client.get_connection_info().tcp_settings().nodelay());
    }
}
