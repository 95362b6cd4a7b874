//! `platform::db::migrate_service`: the platform tables come from `platform`, before a
//! service's own migrations, on fresh schemas and on schemas migrated when each service
//! carried its own copy of them as migration 0001.

use platform::db::migrate_service;
use platform::testing::former_platform_migration;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AssertSqlSafe, PgPool, SqlSafeStr};

fn migration(version: i64, description: &'static str, sql: String) -> Migration {
    Migration::new(
        version,
        description.into(),
        MigrationType::Simple,
        AssertSqlSafe(sql).into_sql_str(),
        false,
    )
}

/// A service's own migrations: the second reads the outbox, so it only applies once the
/// platform tables exist.
fn service_migrations(schema: &str) -> Vec<Migration> {
    vec![
        migration(
            2,
            "widgets",
            format!("CREATE TABLE {schema}.widgets (id BIGINT PRIMARY KEY)"),
        ),
        migration(
            3,
            "pending view",
            format!(
                "CREATE VIEW {schema}.pending AS SELECT id FROM {schema}.outbox WHERE published_at IS NULL"
            ),
        ),
    ]
}

async fn pool() -> PgPool {
    let url = platform::testing::fresh_database().await;
    PgPool::connect(&url).await.expect("connect to the test database")
}

async fn exists(pool: &PgPool, name: &str) -> bool {
    sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(name)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn recorded(pool: &PgPool, schema: &str) -> Vec<i64> {
    sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT version FROM {schema}._sqlx_migrations ORDER BY version"
    )))
    .fetch_all(pool)
    .await
    .unwrap()
}

async fn assert_platform_tables(pool: &PgPool, schema: &str) {
    for table in ["outbox", "processed_events", "idempotency_keys"] {
        assert!(
            exists(pool, &format!("{schema}.{table}")).await,
            "{schema}.{table} exists"
        );
    }
    assert!(exists(pool, &format!("{schema}.outbox_unpublished")).await);
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO {schema}.outbox (event_id, event_type, envelope) VALUES (gen_random_uuid(), 'x', '\\x00')"
    )))
    .execute(pool)
    .await
    .expect("the outbox takes an event");
}

#[tokio::test]
async fn a_fresh_schema_gets_the_platform_tables_before_its_own_migrations() {
    let pool = pool().await;
    let migrator = Migrator::with_migrations(service_migrations("fresh"));

    migrate_service(&pool, "fresh", &migrator).await.unwrap();

    assert_platform_tables(&pool, "fresh").await;
    assert!(exists(&pool, "fresh.pending").await);
    assert_eq!(recorded(&pool, "fresh").await, vec![2, 3]);
}

#[tokio::test]
async fn a_schema_migrated_with_its_own_copy_as_migration_0001_still_migrates() {
    let pool = pool().await;
    // What today's services did: 0001 the copy, then their own, in {schema}._sqlx_migrations.
    let mut former = vec![migration(
        1,
        "platform tables",
        former_platform_migration("legacy"),
    )];
    former.extend(service_migrations("legacy").into_iter().take(1));
    let mut old_build = Migrator::with_migrations(former);
    old_build.dangerous_set_table_name("legacy._sqlx_migrations");
    old_build.create_schema("legacy");
    old_build.run(&pool).await.unwrap();
    assert_eq!(recorded(&pool, "legacy").await, vec![1, 2]);

    let migrator = Migrator::with_migrations(service_migrations("legacy"));
    migrate_service(&pool, "legacy", &migrator).await.unwrap();
    // Starting again (a restart) finds nothing to do.
    migrate_service(&pool, "legacy", &migrator).await.unwrap();

    assert_platform_tables(&pool, "legacy").await;
    assert!(exists(&pool, "legacy.pending").await);
    assert_eq!(recorded(&pool, "legacy").await, vec![1, 2, 3]);
}

#[tokio::test]
async fn replicas_migrating_the_same_schema_at_once_all_succeed() {
    let pool = pool().await;
    let migrator = Migrator::with_migrations(service_migrations("racing"));

    let replicas = (0..4).map(|_| migrate_service(&pool, "racing", &migrator));
    for outcome in futures::future::join_all(replicas).await {
        outcome.unwrap();
    }

    assert_platform_tables(&pool, "racing").await;
    assert_eq!(recorded(&pool, "racing").await, vec![2, 3]);
}

#[tokio::test]
async fn a_schema_migrated_by_a_newer_build_is_refused() {
    let pool = pool().await;
    let newer = Migrator::with_migrations(service_migrations("newer"));
    migrate_service(&pool, "newer", &newer).await.unwrap();

    let older = Migrator::with_migrations(service_migrations("newer").into_iter().take(1).collect());
    let refused = migrate_service(&pool, "newer", &older).await.unwrap_err();

    assert!(refused.to_string().contains("migration 3"), "{refused}");
}
