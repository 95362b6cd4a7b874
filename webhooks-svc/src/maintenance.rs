//! Background upkeep of webhooks-svc: prunes stored events past their retention (their
//! deliveries and attempts go with them) and re-seals signing secrets still sealed with an older
//! key of the keyring, so that old keys can be retired.

use crate::keyring::Keyring;
use crate::repo;
use crate::repo::endpoints::{EndpointSecrets, SealedSecret};
use sqlx::PgPool;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const INTERVAL: Duration = Duration::from_secs(600);
/// Endpoints re-sealed per pass.
const RESEAL_BATCH: i64 = 500;

/// Runs once at start and then every ten minutes until `shutdown` fires.
pub fn spawn(
    pool: PgPool,
    keyring: Keyring,
    retention_days: i32,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match repo::events::prune(&pool, retention_days).await {
                Ok(0) => {}
                Ok(pruned) => tracing::info!(pruned, "expired webhook events pruned"),
                Err(error) => tracing::warn!(%error, "pruning webhook events failed"),
            }
            match reseal_once(&pool, &keyring).await {
                Ok(0) => {}
                Ok(resealed) => {
                    tracing::info!(resealed, key = keyring.current_id(), "signing secrets re-sealed")
                }
                Err(error) => tracing::warn!(%error, "re-sealing signing secrets failed"),
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(INTERVAL) => {}
            }
        }
    })
}

/// Re-seals up to one batch of endpoints whose secrets use an older key; returns how many.
pub async fn reseal_once(pool: &PgPool, keyring: &Keyring) -> anyhow::Result<usize> {
    let mut conn = pool.acquire().await?;
    let stale = repo::endpoints::sealed_with_old_keys(&mut conn, keyring.current_id(), RESEAL_BATCH).await?;
    let mut resealed = 0;
    for (id, old) in stale {
        let context = id.as_bytes();
        let reseal = |secret: &SealedSecret| -> anyhow::Result<SealedSecret> {
            let plain = keyring.open(&secret.sealed, context)?;
            Ok(SealedSecret {
                sealed: keyring.seal(&plain, context),
                key_id: keyring.current_id().to_owned(),
            })
        };
        let new = match (
            reseal(&old.current),
            old.previous.as_ref().map(reseal).transpose(),
        ) {
            (Ok(current), Ok(previous)) => EndpointSecrets { current, previous },
            (Err(error), _) | (_, Err(error)) => {
                tracing::error!(endpoint.id = %id, %error, "a signing secret cannot be opened with the keyring");
                continue;
            }
        };
        if repo::endpoints::reseal(&mut conn, id, &old, &new).await? {
            resealed += 1;
        }
    }
    Ok(resealed)
}
