//! A database migrated when orders-svc carried its own copy of the platform tables (migration
//! 0001, recorded in `orders._sqlx_migrations`) starts with the build that takes them from
//! `platform`.

use crate::helpers::spawn_app_on;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AssertSqlSafe, PgPool, SqlSafeStr};

#[tokio::test]
async fn a_database_migrated_with_the_former_platform_migration_still_starts() {
    let database_url = platform::testing::fresh_database().await;
    let pool = PgPool::connect(&database_url).await.unwrap();
    let mut migrations = vec![Migration::new(
        1,
        "platform tables".into(),
        MigrationType::Simple,
        AssertSqlSafe(platform::testing::former_platform_migration("orders")).into_sql_str(),
        false,
    )];
    let own = Migrator::new(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/migrations"
    )))
    .await
    .unwrap();
    migrations.extend(own.iter().cloned());
    let mut previous_build = Migrator::with_migrations(migrations);
    previous_build.dangerous_set_table_name("orders._sqlx_migrations");
    previous_build.create_schema("orders");
    previous_build.run(&pool).await.unwrap();

    let app = spawn_app_on(database_url).await;

    let recorded: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM orders._sqlx_migrations ORDER BY version")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(recorded.first(), Some(&1), "the former record stays");
    let unpublished: i64 =
        sqlx::query_scalar("SELECT count(*) FROM orders.outbox WHERE published_at IS NULL")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(unpublished, 0);
}
