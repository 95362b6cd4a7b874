//! Connections to the stores: creates the database when missing (a newcomer's first run),
//! connects a pool, migrates a service's schema (the platform tables every service carries,
//! defined once here, then the service's embedded migrations, whose history each crate's
//! `sqlx.toml` places inside the service's own schema), and opens Redis clients.
//!
//! Two choices for latency: a loopback PostgreSQL is reached without TLS unless the URL or
//! `PGSSLMODE` asks for it ([`connect_options`]), and a pooled connection is pinged only after
//! sitting idle ([`PING_IDLE_AFTER`]), not before every query.
//!
//! `TCP_NODELAY`: Redis clients set it here (redis-rs leaves it off). sqlx 0.9.0 neither sets
//! it nor offers a hook (upstream issue transact-rs/sqlx#4335, fixed after 0.9.0); it writes
//! each request in one flush and then reads, so Nagle's algorithm has no unacknowledged data
//! to wait on, and the benchmark (docs/performance.md) shows no 40 ms stall on that hop.

use secrecy::{ExposeSecret, SecretString};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgSslMode};
use sqlx::{ConnectOptions, Connection, PgConnection};
use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

/// A pooled connection idle at least this long is pinged before it is handed out.
///
/// Why: sqlx pings every connection it hands out by default, one more round trip before
/// each query; a connection used a moment ago is almost surely alive, and a dead one only
/// fails its request (the pool then discards it), so only connections that sat idle long
/// enough to have been cut (server restart, idle timeouts on the path) are checked.
const PING_IDLE_AFTER: Duration = Duration::from_secs(10);

/// Connects a pool to `url`, creating the database first when it does not exist.
pub async fn connect(url: &SecretString, max_connections: u32) -> anyhow::Result<PgPool> {
    let options = connect_options(url.expose_secret())?;
    ensure_database(&options).await?;
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_IDLE_AFTER {
                    sqlx::Connection::ping(connection).await?;
                }
                Ok(true)
            })
        })
        .connect_with(options)
        .await?;
    Ok(pool)
}

/// The options a pool connects with for `url`: the URL's own, except that a loopback server
/// is reached without TLS when nothing asked for TLS (no `sslmode` in the URL, no
/// `PGSSLMODE`). sqlx's default (`prefer`) would encrypt loopback traffic, which protects
/// nothing on the same host and costs CPU on both ends of every query. A remote server, and
/// any explicit `sslmode`, keep what was configured.
pub fn connect_options(url: &str) -> Result<PgConnectOptions, sqlx::Error> {
    let options = PgConnectOptions::from_str(url)?
        .log_statements(tracing::log::LevelFilter::Trace)
        .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_secs(1));
    let tls_asked = url_sets_sslmode(url) || crate::config::env_var("PGSSLMODE").is_some();
    if !tls_asked && is_loopback(&options) {
        return Ok(options.ssl_mode(PgSslMode::Disable));
    }
    Ok(options)
}

/// True when the URL's query names an `sslmode` (either spelling sqlx accepts).
fn url_sets_sslmode(url: &str) -> bool {
    let Some((_, query)) = url.split_once('?') else {
        return false;
    };
    query.split('&').any(|pair| {
        let name = pair.split('=').next().unwrap_or_default();
        name.eq_ignore_ascii_case("sslmode") || name.eq_ignore_ascii_case("ssl-mode")
    })
}

/// True for a Unix socket, `localhost` and loopback IP literals.
fn is_loopback(options: &PgConnectOptions) -> bool {
    if options.get_socket().is_some() {
        return true;
    }
    let host = options.get_host().trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
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

/// Runs embedded migrations as they are, without the platform tables: for a schema whose
/// migrations still carry their own copy of them (the gateway's). A service uses
/// [`migrate_service`].
pub async fn migrate(pool: &PgPool, migrator: &Migrator) -> anyhow::Result<()> {
    migrator.run(pool).await?;
    Ok(())
}

/// The platform tables every service schema carries (outbox, processed events, idempotency
/// keys), with `{schema}` standing for the schema's name. Every statement is idempotent.
pub const PLATFORM_TABLES: &str = include_str!("../sql/platform_tables.sql");

/// The version the platform tables had when each service copied them as its own first
/// migration. Schemas migrated then have it recorded in their migration history; it is no
/// longer among a service's migrations and is not an unknown one either.
pub const FORMER_PLATFORM_MIGRATION: i64 = 1;

/// First key of the advisory lock that serializes the migration of one schema (the second key
/// is the hash of the schema's name): "lab!" in ASCII.
const MIGRATION_LOCK_CLASS: i32 = 0x6c61_6221;

/// Migrates a service's schema: creates the schema and the platform tables ([`PLATFORM_TABLES`])
/// in it, then runs the service's own migrations, whose history lives in
/// `{schema}._sqlx_migrations` (what every service's `sqlx.toml` says).
///
/// Replicas starting together are safe: the whole migration holds a session advisory lock on
/// the schema, so one replica migrates while the others wait and then find nothing to do; the
/// platform tables' statements are idempotent as well. A schema migrated when the platform
/// tables were each service's migration 0001 keeps that record and starts as before
/// ([`FORMER_PLATFORM_MIGRATION`]). Any other recorded migration this build does not know
/// (a newer build migrated the schema) is refused, as sqlx refuses it.
pub async fn migrate_service(pool: &PgPool, schema: &str, migrator: &Migrator) -> anyhow::Result<()> {
    anyhow::ensure!(
        is_schema_name(schema),
        "schema name {schema:?} is not a lowercase SQL identifier"
    );
    let mut connection = pool.acquire().await?;
    sqlx::query("SELECT pg_advisory_lock($1, hashtext($2))")
        .bind(MIGRATION_LOCK_CLASS)
        .bind(schema)
        .execute(&mut *connection)
        .await?;
    let migrated = migrate_locked(&mut connection, schema, migrator).await;
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1, hashtext($2))")
        .bind(MIGRATION_LOCK_CLASS)
        .bind(schema)
        .execute(&mut *connection)
        .await;
    if unlocked.is_err() {
        // Closing the session releases its advisory locks.
        connection.close_on_drop();
    }
    migrated?;
    unlocked?;
    Ok(())
}

async fn migrate_locked(
    connection: &mut PgConnection,
    schema: &str,
    migrator: &Migrator,
) -> anyhow::Result<()> {
    let platform_tables = PLATFORM_TABLES.replace("{schema}", schema);
    let mut transaction = connection.begin().await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(platform_tables))
        .execute(&mut *transaction)
        .await?;
    transaction.commit().await?;

    let history = format!("{schema}._sqlx_migrations");
    let recorded: Vec<i64> = if table_exists(connection, &history).await? {
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT version FROM {history}")))
            .fetch_all(&mut *connection)
            .await?
    } else {
        Vec::new()
    };
    if let Some(unknown) = recorded
        .iter()
        .find(|version| **version != FORMER_PLATFORM_MIGRATION && !migrator.version_exists(**version))
    {
        anyhow::bail!(
            "schema {schema} has migration {unknown} recorded, which this build does not know: a newer build migrated it"
        );
    }

    let mut service = Migrator::with_migrations(migrator.iter().cloned().collect());
    service.dangerous_set_table_name(history);
    service.create_schema(schema.to_owned());
    service.set_ignore_missing(true);
    service.run(&mut *connection).await?;
    Ok(())
}

async fn table_exists(connection: &mut PgConnection, name: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar::<_, bool>("SELECT to_regclass($1) IS NOT NULL")
        .bind(name)
        .fetch_one(connection)
        .await
}

/// A lowercase SQL identifier, safe to splice into DDL unquoted.
fn is_schema_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|first| first.is_ascii_lowercase() || first == '_')
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// How `rediss://` connections trust their server, and prove who they are: the CA that signs
/// the server's certificate (`REDIS_CA_FILE`, PEM; without it the system's roots) and, for
/// servers that require client certificates, `REDIS_CLIENT_CERT_FILE` and
/// `REDIS_CLIENT_KEY_FILE` (PEM). A `redis://` URL ignores them.
#[derive(Clone, Default)]
pub struct RedisTls {
    pub ca_pem: Option<Vec<u8>>,
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for RedisTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTls")
            .field("ca", &self.ca_pem.is_some())
            .field("client_certificate", &self.client_cert_pem.is_some())
            .finish_non_exhaustive()
    }
}

impl RedisTls {
    /// Reads `REDIS_CA_FILE`, `REDIS_CLIENT_CERT_FILE` and `REDIS_CLIENT_KEY_FILE`.
    pub fn from_env() -> std::io::Result<Self> {
        let read = |name: &str| {
            crate::config::env_var(name)
                .map(|path| {
                    std::fs::read(&path)
                        .map_err(|error| std::io::Error::new(error.kind(), format!("{name}={path}: {error}")))
                })
                .transpose()
        };
        let tls = Self {
            ca_pem: read("REDIS_CA_FILE")?,
            client_cert_pem: read("REDIS_CLIENT_CERT_FILE")?,
            client_key_pem: read("REDIS_CLIENT_KEY_FILE")?,
        };
        if tls.client_cert_pem.is_some() != tls.client_key_pem.is_some() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "REDIS_CLIENT_CERT_FILE and REDIS_CLIENT_KEY_FILE go together",
            ));
        }
        Ok(tls)
    }
}

/// Opens a Redis client whose connections set `TCP_NODELAY`; a `rediss://` URL connects over
/// TLS (rustls) with the trust of [`RedisTls::from_env`].
///
/// Why: a multiplexed connection writes a command while the previous one may still be
/// unacknowledged, and Nagle's algorithm would hold the small write until a delayed ACK.
pub fn redis_client(url: &str) -> redis::RedisResult<redis::Client> {
    static TLS: std::sync::OnceLock<Result<RedisTls, String>> = std::sync::OnceLock::new();
    if !is_tls(url) {
        return redis_client_with(url, &RedisTls::default());
    }
    match TLS.get_or_init(|| RedisTls::from_env().map_err(|error| error.to_string())) {
        Ok(tls) => redis_client_with(url, tls),
        Err(error) => Err(redis::RedisError::from(std::io::Error::other(error.clone()))),
    }
}

fn is_tls(url: &str) -> bool {
    url.trim_start().to_ascii_lowercase().starts_with("rediss://")
}

/// [`redis_client`] with explicit TLS trust.
pub fn redis_client_with(url: &str, tls: &RedisTls) -> redis::RedisResult<redis::Client> {
    let info = redis::IntoConnectionInfo::into_connection_info(url)?
        .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
    if !is_tls(url) {
        return redis::Client::open(info);
    }
    // rustls needs a process-wide provider: the workspace's one, ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    if tls.ca_pem.is_none() && tls.client_cert_pem.is_none() {
        return redis::Client::open(info);
    }
    let client_tls = match (&tls.client_cert_pem, &tls.client_key_pem) {
        (Some(cert), Some(key)) => Some(redis::ClientTlsConfig {
            client_cert: cert.clone(),
            client_key: key.clone(),
        }),
        _ => None,
    };
    redis::Client::build_with_tls(
        info,
        redis::TlsCertificates {
            client_tls,
            root_cert: tls.ca_pem.clone(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(url: &str) -> PgSslMode {
        connect_options(url).unwrap().get_ssl_mode()
    }

    #[test]
    fn a_loopback_database_without_an_sslmode_is_reached_without_tls() {
        if crate::config::env_var("PGSSLMODE").is_some() {
            return; // an explicit PGSSLMODE is respected; nothing to check here
        }
        assert!(matches!(
            mode("postgres://postgres@127.0.0.1:5432/lab"),
            PgSslMode::Disable
        ));
        assert!(matches!(
            mode("postgres://postgres@localhost/lab"),
            PgSslMode::Disable
        ));
        assert!(matches!(
            mode("postgres://postgres@[::1]:5432/lab"),
            PgSslMode::Disable
        ));
    }

    #[test]
    fn remote_databases_and_explicit_sslmodes_keep_their_tls() {
        if crate::config::env_var("PGSSLMODE").is_some() {
            return;
        }
        assert!(matches!(
            mode("postgres://lab@db.internal:5432/lab"),
            PgSslMode::Prefer
        ));
        assert!(matches!(mode("postgres://lab@10.0.0.5/lab"), PgSslMode::Prefer));
        assert!(matches!(
            mode("postgres://lab@127.0.0.1/lab?sslmode=prefer"),
            PgSslMode::Prefer
        ));
        assert!(matches!(
            mode("postgres://lab@127.0.0.1/lab?ssl-mode=require"),
            PgSslMode::Require
        ));
        assert!(matches!(
            mode("postgres://lab@db.internal/lab?sslmode=verify-full"),
            PgSslMode::VerifyFull
        ));
    }

    #[test]
    fn redis_clients_set_tcp_nodelay() {
        let client = redis_client("redis://127.0.0.1:6379/0").unwrap();
        assert!(client.get_connection_info().tcp_settings().nodelay());
    }
}
