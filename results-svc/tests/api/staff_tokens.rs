//! Staff tokens stop working within seconds of their operator's revocation: results-svc learns
//! the revocations the gateway writes to Redis, by pub/sub at once and by reading the whole list
//! every few seconds when a message is lost.

use crate::helpers::*;
use platform::error::ErrorCode;
use platform::tokens::revocations::{self, Revocation, Revoked};
use platform::tokens::testing::operator_id;
use std::time::Duration;

fn now() -> u64 {
    u64::try_from(platform::time::now().timestamp()).unwrap()
}

/// Waits until `token` is refused as unauthenticated (reading a COA that does not exist: an
/// admitted token gets `not_found`).
async fn wait_until_refused(app: &TestApp, token: &str) {
    platform::testing::wait_for(
        "the revoked token to be refused",
        Duration::from_secs(10),
        || async {
            let error = app.lab_coa(token, "ACC-2026-NONE").await.err()?;
            (error.code == ErrorCode::Unauthenticated).then_some(())
        },
    )
    .await;
}

async fn admitted(app: &TestApp, token: &str) -> bool {
    app.lab_coa(token, "ACC-2026-NONE")
        .await
        .is_err_and(|error| error.code == ErrorCode::NotFound)
}

#[tokio::test]
async fn a_disabled_operators_staff_token_is_refused_within_seconds_while_other_operators_work_on() {
    let app = spawn_app().await;
    let (ana, quinn) = (app.analyst(), app.qa());
    assert!(admitted(&app, &ana).await && admitted(&app, &quinn).await);

    // The gateway's announcement of ana's disabling, as it writes it.
    let revocation = Revocation {
        revoked: Revoked::Operator(operator_id("ana")),
        at: now(),
    };
    let mut redis = platform::testing::events::redis_connection().await;
    revocations::publish(&mut redis, &app.stream_prefix, &[revocation])
        .await
        .unwrap();

    wait_until_refused(&app, &ana).await;
    assert!(
        admitted(&app, &quinn).await,
        "another operator's token still works"
    );
}

#[tokio::test]
async fn a_revocation_whose_message_was_lost_is_read_from_the_list_within_seconds() {
    let app = spawn_app().await;
    let quinn = app.qa();
    assert!(admitted(&app, &quinn).await);
    // Written to the list only, as if the message had been lost.
    let mut redis = platform::testing::events::redis_connection().await;
    let revocation = Revocation {
        revoked: Revoked::Operator(operator_id("quinn")),
        at: now(),
    };
    let (): () = redis::cmd("HSET")
        .arg(revocations::key(&app.stream_prefix))
        .arg(revocation.field())
        .arg(revocation.at)
        .query_async(&mut redis)
        .await
        .unwrap();
    wait_until_refused(&app, &quinn).await;
    assert!(admitted(&app, &app.analyst()).await);
}
