//! Database connection: creates the database when missing (a newcomer's first run), connects a
//! pool, and runs a service's embedded migrations (each crate's `sqlx.toml` places the
//! migrations table inside the service's own schema).

use secrecy::{ExposeSecret, SecretString};
use sqlx::ConnectOptions;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::str::FromStr;
use std::time::Duration;

/// Connects a pool to `url`, creating the database first when it does not exist.
pub async fn connect(url: &SecretString, max_connections: u32) -> anyhow::Result<PgPool> {
    let options = PgConnectOptions::from_str(url.expose_secret())?
        .log_statements(tracing::log::LevelFilter::Trace)
        .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_secs(1));
    ensure_database(&options).await?;
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await?;
    Ok(pool)
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
