//! Announcing revoked staff tokens to the mesh (`platform::tokens::revocations` holds the format
//! and what every process does with it).
//!
//! When an operator is disabled or its credential rotated, the use case records the revocation
//! in `identity.staff_revocations` in its transaction, then [`Announcer::announce`] adds it to
//! this replica's own list (refused here at once), writes it to the Redis hash and publishes it.
//! Every `REFRESH_EVERY`, [`Announcer::run`] reads the revocations that can still matter from
//! the database into this replica's list (so identity-svc learns the other replicas' revocations
//! from its own database, and needs no Redis to check staff tokens) and writes them to the hash
//! again, so one that could not be written at the time (Redis down, or restarted empty) reaches
//! the mesh once Redis answers.

use super::repo::{self, RevocationRow};
use platform::tokens::StaffRevocations;
use platform::tokens::revocations::{self, ENTRY_LIFETIME, REFRESH_EVERY, Revocation, Revoked};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

/// The revocation as the mesh reads it.
pub fn revocation_of(row: &RevocationRow) -> Revocation {
    let revoked = match &row.credential_public_id {
        Some(public_id) => Revoked::Credential(public_id.clone()),
        None => Revoked::Operator(row.operator_id),
    };
    Revocation {
        revoked,
        at: u64::try_from(row.revoked_at.timestamp()).unwrap_or_default(),
    }
}

/// Tells the mesh which staff tokens stopped working.
#[derive(Clone)]
pub struct Announcer {
    redis: redis::aio::ConnectionManager,
    stream_prefix: String,
    /// This replica's own list (the one its token verifier checks).
    local: StaffRevocations,
}

impl Announcer {
    pub fn new(redis: redis::aio::ConnectionManager, stream_prefix: &str, local: StaffRevocations) -> Self {
        Self {
            redis,
            stream_prefix: stream_prefix.to_owned(),
            local,
        }
    }

    /// Refuses the revoked tokens here at once and tells every process (a failure is logged:
    /// [`run`](Self::run) writes the revocation again until Redis takes it).
    pub async fn announce(&self, row: &RevocationRow) {
        let revocation = revocation_of(row);
        self.local.insert(revocation.clone());
        let mut redis = self.redis.clone();
        if let Err(error) = revocations::publish(&mut redis, &self.stream_prefix, &[revocation]).await {
            tracing::warn!(%error, "could not publish a staff-token revocation; it is written again every {REFRESH_EVERY:?} until Redis takes it");
        }
    }

    /// Every `REFRESH_EVERY` until `shutdown` fires: reads the revocations that still matter
    /// from the database into this replica's list and writes them to Redis.
    pub async fn run(self, pool: PgPool, shutdown: CancellationToken) {
        let mut every = tokio::time::interval(REFRESH_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = every.tick() => {}
            }
            let Some(current) = self.read(&pool).await else {
                continue;
            };
            let mut redis = self.redis.clone();
            match revocations::rewrite(&mut redis, &self.stream_prefix, &current).await {
                Ok(()) if failing => {
                    tracing::info!("staff-token revocations are written to Redis again");
                    failing = false;
                }
                Ok(()) => {}
                Err(error) if !failing => {
                    tracing::warn!(%error, "cannot write staff-token revocations to Redis; services refuse staff tokens once their copy is out of date");
                    failing = true;
                }
                Err(_) => {}
            }
        }
    }

    /// Reads the revocations that still matter from the database into this replica's list
    /// (which is then current); none when the database did not answer (logged).
    pub async fn read(&self, pool: &PgPool) -> Option<Vec<Revocation>> {
        let lifetime = chrono::Duration::from_std(ENTRY_LIFETIME).unwrap_or_default();
        match repo::revocations_since(pool, platform::time::now() - lifetime).await {
            Ok(rows) => {
                let current: Vec<Revocation> = rows.iter().map(revocation_of).collect();
                self.local.merge_read(current.clone());
                Some(current)
            }
            Err(error) => {
                tracing::warn!(%error, "cannot read staff-token revocations from the database");
                None
            }
        }
    }
}
