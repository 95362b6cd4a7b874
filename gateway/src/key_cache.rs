//! The authenticator's memory of identity-svc's answers, bounded both ways:
//!
//! * known keys (their record, a digest of the key as presented and its principal), at most
//!   `GATEWAY_KEY_CACHE_CAPACITY`;
//! * unknown public ids (no key, or a revoked one: a negative cache, so a client retrying one bad
//!   key costs one lookup), at most `GATEWAY_NEGATIVE_KEY_CACHE_CAPACITY`;
//!
//! each least recently used first out and trusted for at most the key-cache TTL. A revocation
//! evicts the key at once ([`KeyCache::evict`]); a load that raced with an eviction is not
//! stored (the epoch changed while it ran), so a revoked key cannot be cached again from a read
//! that predates the revocation.

use hashlink::LruCache;
use platform::principal::Principal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A valid key as identity-svc described it (`VerifyApiKey`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedKey {
    pub id: uuid::Uuid,
    pub customer_id: uuid::Uuid,
    pub public_id: String,
    pub scopes: Vec<String>,
    pub spend_limit_cents: Option<i64>,
    /// The key's customer is a sandbox customer (docs/sandbox.md).
    pub sandbox: bool,
}

/// A key as the authenticator needs it.
pub struct KeyRecord {
    pub key: VerifiedKey,
    /// SHA-256 of the whole key identity-svc verified: a later request presenting the same
    /// public id is compared with it (in constant time) instead of asking identity-svc again.
    pub digest: [u8; 32],
    /// The principal services receive for this key (shared by every request of the key).
    pub principal: std::sync::Arc<Principal>,
}

/// What the cache knows of a public id.
pub enum Cached {
    Known(Arc<KeyRecord>),
    /// No key has this public id, or it is revoked (as of a recent lookup).
    Unknown,
    /// A known key whose entry is older than the TTL: when the presented key matches its digest,
    /// ask identity-svc again (not charged to the client's lookup budget: only a real key's
    /// holder can cause it, once per TTL).
    Stale(Arc<KeyRecord>),
    /// Not in the cache: read the key store.
    Miss,
}

/// Sizes of the cache, for tests and operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSizes {
    pub known: usize,
    pub unknown: usize,
}

/// The bounded key cache.
pub struct KeyCache {
    ttl: Duration,
    entries: Mutex<Entries>,
    /// Incremented by every eviction; loads that span an eviction are not stored.
    epoch: AtomicU64,
}

struct Entries {
    known: LruCache<String, (Instant, Arc<KeyRecord>)>,
    unknown: LruCache<String, Instant>,
}

impl KeyCache {
    pub fn new(ttl: Duration, known_capacity: usize, unknown_capacity: usize) -> Self {
        Self {
            ttl,
            entries: Mutex::new(Entries {
                known: LruCache::new(known_capacity.max(1)),
                unknown: LruCache::new(unknown_capacity.max(1)),
            }),
            epoch: AtomicU64::new(0),
        }
    }

    /// Looks a public id up.
    pub fn get(&self, public_id: &str) -> Cached {
        let now = Instant::now();
        let mut entries = self.lock();
        if let Some((fetched_at, record)) = entries.known.get(public_id) {
            if now.duration_since(*fetched_at) < self.ttl {
                return Cached::Known(Arc::clone(record));
            }
            return Cached::Stale(Arc::clone(record));
        }
        if let Some(fetched_at) = entries.unknown.get(public_id)
            && now.duration_since(*fetched_at) < self.ttl
        {
            return Cached::Unknown;
        }
        Cached::Miss
    }

    /// The current epoch; pass it to [`store`](Self::store) after the load.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Stores the outcome of a load that started at `epoch`, unless an eviction happened since.
    pub fn store(&self, public_id: &str, record: Option<Arc<KeyRecord>>, epoch: u64) {
        let now = Instant::now();
        let mut entries = self.lock();
        if self.epoch.load(Ordering::Acquire) != epoch {
            return;
        }
        match record {
            Some(record) => {
                entries.unknown.remove(public_id);
                entries.known.insert(public_id.to_owned(), (now, record));
            }
            None => {
                entries.known.remove(public_id);
                entries.unknown.insert(public_id.to_owned(), now);
            }
        }
    }

    /// Forgets a public id (a key was revoked or changed).
    pub fn evict(&self, public_id: &str) {
        let mut entries = self.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        entries.known.remove(public_id);
        entries.unknown.remove(public_id);
    }

    /// Forgets every known key (revocations may have been missed).
    pub fn clear(&self) {
        let mut entries = self.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        entries.known.clear();
    }

    pub fn sizes(&self) -> CacheSizes {
        let entries = self.lock();
        CacheSizes {
            known: entries.known.len(),
            unknown: entries.unknown.len(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn record() -> Arc<KeyRecord> {
        let key = VerifiedKey {
            id: Uuid::now_v7(),
            customer_id: Uuid::now_v7(),
            public_id: "p".into(),
            scopes: vec![],
            spend_limit_cents: None,
            sandbox: false,
        };
        let principal = crate::authenticator::principal_of(&key);
        Arc::new(KeyRecord {
            key,
            digest: [0; 32],
            principal: Arc::new(principal),
        })
    }

    #[test]
    fn unknown_ids_are_remembered_up_to_the_capacity() {
        let cache = KeyCache::new(Duration::from_secs(5), 10, 3);
        for id in ["a", "b", "c", "d"] {
            assert!(matches!(cache.get(id), Cached::Miss));
            cache.store(id, None, cache.epoch());
        }
        assert_eq!(cache.sizes(), CacheSizes { known: 0, unknown: 3 });
        assert!(matches!(cache.get("d"), Cached::Unknown));
        assert!(matches!(cache.get("a"), Cached::Miss));
    }

    #[test]
    fn an_eviction_wins_over_a_load_that_started_before_it() {
        let cache = KeyCache::new(Duration::from_secs(5), 10, 10);
        cache.store("k", Some(record()), cache.epoch());
        assert!(matches!(cache.get("k"), Cached::Known(_)));
        let epoch = cache.epoch();
        cache.evict("k");
        cache.store("k", Some(record()), epoch);
        assert!(matches!(cache.get("k"), Cached::Miss));
        cache.store("k", Some(record()), cache.epoch());
        cache.clear();
        assert!(matches!(cache.get("k"), Cached::Miss));
    }

    #[test]
    fn entries_expire_after_the_ttl() {
        let cache = KeyCache::new(Duration::ZERO, 10, 10);
        cache.store("k", Some(record()), cache.epoch());
        cache.store("u", None, cache.epoch());
        assert!(matches!(cache.get("k"), Cached::Stale(_)));
        assert!(matches!(cache.get("u"), Cached::Miss));
    }
}
