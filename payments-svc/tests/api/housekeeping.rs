//! Housekeeping of the platform tables in the payments schema: idempotency records are kept a
//! day after the request, and claims abandoned without an outcome a day after their lease ended.

use crate::helpers::spawn_app;
use platform::error::ApiError;
use platform::idempotency::{Claim, IdempotencyScope, IdempotencyStore, StoredOutcome};
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

fn scope(customer_id: Uuid, key: &str) -> IdempotencyScope {
    IdempotencyScope {
        customer_id,
        operation: "housekeeping.test",
        key: key.to_owned(),
    }
}

/// Claims `key` and returns its ticket (the claim must be fresh).
async fn claim(
    store: &IdempotencyStore,
    pool: &PgPool,
    scope: &IdempotencyScope,
) -> platform::idempotency::Ticket {
    match store.claim(pool, scope, b"request").await.unwrap() {
        Claim::Run { ticket, .. } => ticket,
        Claim::Replay(outcome) => panic!("{} was already used: {outcome:?}", scope.key),
    }
}

/// Moves a row's lease end and creation time into the past.
async fn age(pool: &PgPool, key: &str, lease_ended_hours_ago: i32, created_hours_ago: i32) {
    sqlx::query(
        "UPDATE payments.idempotency_keys SET locked_until = now() - make_interval(hours => $2), \
           created_at = now() - make_interval(hours => $3) WHERE idempotency_key = $1",
    )
    .bind(key)
    .bind(lease_ended_hours_ago)
    .bind(created_hours_ago)
    .execute(pool)
    .await
    .unwrap();
}

async fn keys(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar("SELECT idempotency_key FROM payments.idempotency_keys ORDER BY idempotency_key")
        .fetch_all(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn abandoned_claims_go_a_day_after_their_lease_ended_and_completed_records_a_day_after_the_request() {
    let app = spawn_app().await;
    let pool = &app.pool;
    let store = IdempotencyStore::new("payments").with_timing(Duration::from_secs(30), Duration::ZERO);
    let customer = Uuid::now_v7();

    // Abandoned long ago, without and with a recovery point: pruned.
    claim(&store, pool, &scope(customer, "abandoned-bare")).await;
    age(pool, "abandoned-bare", 25, 26).await;
    let ticket = claim(&store, pool, &scope(customer, "abandoned-resumable")).await;
    let mut tx = pool.begin().await.unwrap();
    store
        .save_recovery(&mut tx, &ticket, &serde_json::json!({ "step": 1 }))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    age(pool, "abandoned-resumable", 25, 26).await;
    // Expired an hour ago (a retry may still take it over) or still running: kept.
    claim(&store, pool, &scope(customer, "expired-recently")).await;
    age(pool, "expired-recently", 1, 30).await;
    claim(&store, pool, &scope(customer, "running")).await;
    // Completed: kept for replays for a day after the request, then pruned.
    for (key, created_hours_ago) in [("completed-old", 25), ("completed-fresh", 1)] {
        let ticket = claim(&store, pool, &scope(customer, key)).await;
        let mut tx = pool.begin().await.unwrap();
        let outcome = StoredOutcome::Failure(ApiError::new(platform::error::ErrorCode::NotFound, "gone"));
        store.complete(&mut tx, &ticket, &outcome).await.unwrap();
        tx.commit().await.unwrap();
        age(pool, key, created_hours_ago, created_hours_ago).await;
    }

    platform::housekeeping::prune_once(pool, "payments")
        .await
        .unwrap();

    assert_eq!(
        keys(pool).await,
        ["completed-fresh", "expired-recently", "running"]
    );
    // The pruned keys are free again: a new request runs from scratch.
    match store
        .claim(pool, &scope(customer, "abandoned-resumable"), b"request")
        .await
        .unwrap()
    {
        Claim::Run { recovery, .. } => assert_eq!(recovery, None),
        Claim::Replay(outcome) => panic!("unexpected replay {outcome:?}"),
    }
    assert_eq!(
        platform::housekeeping::prune_abandoned_claims(pool, "payments")
            .await
            .unwrap(),
        0,
        "nothing else was abandoned"
    );
}
