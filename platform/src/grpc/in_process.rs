//! In-process gRPC calls: when a channel's target is a loopback address that this same process
//! serves (labd runs the whole mesh in one process), a call is dispatched straight to that
//! server's service stack — the same access guards, input rules, metrics, trace span and
//! timeout, and the same protobuf encoding of request and answer — without HTTP/2 framing, a
//! connection or a task of its own: the handler runs in the caller's task. Channels to any
//! other address (Kubernetes, another host, a name) are plain TCP exactly as before, and so is
//! a loopback address no server of this process listens on.
//!
//! The registry is consulted on every call, so a server that stops (its [`Registration`]
//! dropped) is no longer reached in memory: its callers fail over TCP as they would against a
//! stopped pod. A call is dispatched in memory only between a client and a server of the same
//! Tokio runtime: the tests run one mesh per runtime in one process, and a call into a server
//! of another runtime (one that is stopping, say) would tie the two meshes together.
//!
//! Why: with HTTP/2 over an in-memory pipe the mesh still spent its CPU in task wake-ups and
//! switches (client connection task, server connection task, the handler's stream task) and
//! in framing; issue 7's profile and `docs/performance.md` ("Through the mesh") record what
//! dispatching directly bought.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, RwLock};
use tonic::body::Body;
use tower::util::BoxCloneSyncService;

/// A server's whole service stack, callable in memory.
pub type LocalService = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;

/// The servers of this process that take in-memory calls, by listening address.
static SERVERS: LazyLock<RwLock<HashMap<SocketAddr, Server>>> = LazyLock::new(RwLock::default);

/// A registered server: its service stack, the runtime it runs on, and its registration.
struct Server {
    service: LocalService,
    runtime: Option<tokio::runtime::Id>,
    registration: u64,
}

/// The id of the runtime the caller runs on, if any.
fn current_runtime() -> Option<tokio::runtime::Id> {
    tokio::runtime::Handle::try_current()
        .ok()
        .map(|handle| handle.id())
}

/// Whether new channels may call in memory (benchmarks compare both ways).
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Calls dispatched in memory so far (for tests and diagnostics).
static LOCAL_CALLS: AtomicU64 = AtomicU64::new(0);
/// Registrations made so far (each registration's identity).
static REGISTRATIONS: AtomicU64 = AtomicU64::new(0);

/// Lets channels created from now on call in memory (the default) or not.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether new channels may call in memory.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// How many calls were dispatched in memory.
pub fn local_calls() -> u64 {
    LOCAL_CALLS.load(Ordering::Relaxed)
}

/// The loopback socket address a channel URI names with an IP literal, if any.
pub fn loopback_target(uri: &http::Uri) -> Option<SocketAddr> {
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = host.parse().ok()?;
    let port = uri.port_u16().unwrap_or(80);
    ip.is_loopback().then_some(SocketAddr::new(ip, port))
}

/// A server's registration; dropping it stops in-memory calls to that server.
pub struct Registration {
    address: SocketAddr,
    registration: Option<u64>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let Some(registration) = self.registration.take() else {
            return;
        };
        let mut servers = SERVERS.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if servers
            .get(&self.address)
            .is_some_and(|current| current.registration == registration)
        {
            servers.remove(&self.address);
        }
    }
}

/// Registers the service stack of a server listening on `address` (loopback addresses only;
/// others are reached over TCP only).
pub fn register(address: SocketAddr, service: LocalService) -> Registration {
    let registration = address.ip().is_loopback().then(|| {
        let registration = REGISTRATIONS.fetch_add(1, Ordering::Relaxed);
        SERVERS
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(
                address,
                Server {
                    service,
                    runtime: current_runtime(),
                    registration,
                },
            );
        registration
    });
    Registration {
        address,
        registration,
    }
}

/// The service stack of the server of this process (and of the caller's runtime) listening on
/// `address`, if there is one now.
pub fn local_service(address: SocketAddr) -> Option<LocalService> {
    let runtime = current_runtime()?;
    let servers = SERVERS.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = servers.get(&address)?;
    (server.runtime == Some(runtime)).then(|| {
        LOCAL_CALLS.fetch_add(1, Ordering::Relaxed);
        server.service.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_ip_literals_are_in_process_targets() {
        let target = |uri: &'static str| loopback_target(&http::Uri::from_static(uri));
        assert_eq!(
            target("http://127.0.0.1:50052"),
            Some(SocketAddr::from(([127, 0, 0, 1], 50052)))
        );
        assert!(target("http://[::1]:7").is_some());
        assert_eq!(target("http://orders-svc:50052"), None);
        assert_eq!(target("http://localhost:50052"), None);
        assert_eq!(target("http://10.0.0.7:50052"), None);
    }
}
