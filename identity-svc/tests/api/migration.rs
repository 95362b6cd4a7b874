//! The first start on a database that the gateway's identity tables are in moves them, rows and
//! all, into the `identity` schema (migrations/0002_identity.sql).

use crate::helpers::spawn_app_on;
use proto::identity as pb;
use sqlx::Executor;

#[tokio::test]
async fn the_gateways_identity_tables_move_to_the_identity_schema_with_their_rows() {
    let database_url = platform::testing::fresh_database().await;
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    pool.execute(include_str!("../fixtures/gateway_identity_tables.sql"))
        .await
        .unwrap();
    let customer_id = uuid::Uuid::now_v7();
    sqlx::query("INSERT INTO gateway.customers (id, name, email, created_by) VALUES ($1, 'Old Labs', 'old@labs.example', 'alice')")
        .bind(customer_id)
        .execute(&pool)
        .await
        .unwrap();

    let service = spawn_app_on(database_url).await;
    let moved: Vec<String> = sqlx::query_scalar(
        "SELECT table_schema || '.' || table_name FROM information_schema.tables \
         WHERE table_name IN ('customers', 'api_keys', 'operators', 'staff_revocations') ORDER BY 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        moved,
        [
            "identity.api_keys",
            "identity.customers",
            "identity.operators",
            "identity.staff_revocations"
        ]
    );
    let mut client = service.identity.client().await;
    let customers = client
        .list_customers(service.identity.admin(pb::ListCustomersRequest {}))
        .await
        .unwrap()
        .into_inner()
        .customers;
    assert!(
        customers
            .iter()
            .any(|customer| customer.id == customer_id.to_string())
    );
    // The moved tables take new rows as before (the key's foreign key moved with them).
    service.identity.keyed_customer(&["orders:read"]).await;
}

#[tokio::test]
async fn a_database_with_only_part_of_the_gateways_identity_tables_is_refused() {
    let database_url = platform::testing::fresh_database().await;
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    let fixture = include_str!("../fixtures/gateway_identity_tables.sql");
    // Up to the gateway's migration 0002 only.
    let partial = &fixture[..fixture.find("-- Lab operators").unwrap()];
    pool.execute(partial).await.unwrap();
    let settings =
        identity_svc::Settings::local(&database_url, &platform::testing::redis_url(), "refused-partial");
    let error = identity_svc::Application::build(settings)
        .await
        .err()
        .expect("refused");
    assert!(
        format!("{error:#}").contains("previous gateway release"),
        "{error:#}"
    );
}
