//! Refreshers: what the running parts of a process read when Prometheus scrapes (pool sizes,
//! outbox backlog, consumer lag). Registering one returns a [`Registration`] that its part keeps
//! for as long as it runs: the registry holds only a weak reference, so when the part stops (or
//! its runtime is dropped, as when a test panics) the refresher and everything it captured (a
//! database pool, a Redis connection) are released at once, never kept alive by the registry.
//!
//! Each refresher runs on the runtime that registered it, whichever runtime serves the scrape:
//! a pool used from another runtime would open its new connections on that runtime's I/O
//! driver and lose them when that runtime stops (the tests run one mesh per runtime in one
//! process, and a scrape of one mesh used to break another's pool this way).

use futures::future::BoxFuture;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

type Refresh = dyn Fn() -> BoxFuture<'static, ()> + Send + Sync;

static REFRESHERS: Mutex<Vec<Weak<Registered>>> = Mutex::new(Vec::new());

/// How long one scrape waits for a refresher (a slow database must not hang the scrape: the
/// previous values are served instead).
const REFRESH_BUDGET: Duration = Duration::from_secs(2);

/// Keeps a refresher registered; dropping it unregisters the refresher.
#[must_use = "the refresher is unregistered when its registration is dropped"]
pub struct Registration {
    _refresh: Arc<Registered>,
}

/// A refresher and the runtime it runs on.
struct Registered {
    refresh: Box<Refresh>,
    runtime: tokio::runtime::Handle,
}

fn refreshers() -> std::sync::MutexGuard<'static, Vec<Weak<Registered>>> {
    REFRESHERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Registers `refresh`, run before each scrape (on the calling runtime) while the returned
/// registration lives. Must be called within a Tokio runtime.
pub fn on_scrape<F>(refresh: F) -> Registration
where
    F: Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static,
{
    let refresh = Arc::new(Registered {
        refresh: Box::new(refresh),
        runtime: tokio::runtime::Handle::current(),
    });
    let mut registered = refreshers();
    registered.retain(|weak| weak.strong_count() > 0);
    registered.push(Arc::downgrade(&refresh));
    Registration { _refresh: refresh }
}

/// Runs every live refresher concurrently, each within the refresh budget.
pub async fn refresh() {
    let live: Vec<Arc<Registered>> = {
        let mut registered = refreshers();
        registered.retain(|weak| weak.strong_count() > 0);
        registered.iter().filter_map(Weak::upgrade).collect()
    };
    futures::future::join_all(live.into_iter().map(|registered| async move {
        // Runs on the registering runtime; a runtime that has stopped refuses the task.
        let work = registered.runtime.spawn((registered.refresh)());
        drop(registered);
        if tokio::time::timeout(REFRESH_BUDGET, work).await.is_err() {
            tracing::warn!(
                "a metrics refresher took longer than {REFRESH_BUDGET:?}; serving its previous values"
            );
        }
    }))
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_refresher_runs_on_each_scrape_until_its_registration_is_dropped_and_then_releases_what_it_holds()
     {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let registration = on_scrape(move || {
            let counter = counter.clone();
            Box::pin(async move {
                counter.fetch_add(1, Ordering::SeqCst);
            })
        });
        refresh().await;
        refresh().await;
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        drop(registration);
        refresh().await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "a stopped part is no longer refreshed"
        );
        assert_eq!(
            Arc::strong_count(&runs),
            1,
            "the registry keeps nothing the refresher captured"
        );
    }
}
