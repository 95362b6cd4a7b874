//! Peers named by a gRPC `dns:` target (`dns:///orders-svc-peers:50052`): the name is resolved
//! now and every [`REFRESH`] after, and calls are balanced over every address it resolves to
//! (tonic's power-of-two-choices balancer), an address that disappears leaving the balancer and
//! a new one joining it.
//!
//! Why: a gRPC client keeps one HTTP/2 connection per address. Through a Kubernetes ClusterIP
//! Service (one virtual address) that connection reaches one pod, so replicas added by the
//! autoscaler would get no calls from clients already connected. A headless Service
//! (`clusterIP: None`) resolves to the ready pods' own addresses instead, and re-resolving
//! follows the autoscaler and rollouts.

use std::collections::BTreeSet;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tonic::transport::channel::Change;
use tonic::transport::{Channel, Endpoint};

/// How often a `dns:` target is resolved again.
pub const REFRESH: Duration = Duration::from_secs(5);

/// The host and port of a gRPC `dns:` target (`dns:///host:port` or `dns:host:port`; an
/// authority between `//` and `/`, naming a DNS server, is not supported); `None` for any other
/// address.
pub fn target(address: &str) -> Option<(String, u16)> {
    let rest = address.strip_prefix("dns:")?;
    let rest = match rest.strip_prefix("//") {
        Some(with_authority) => with_authority.strip_prefix('/')?,
        None => rest,
    };
    let (host, port) = rest.rsplit_once(':')?;
    let port = port.parse().ok()?;
    (!host.is_empty() && !host.contains('/')).then(|| (host.to_owned(), port))
}

/// A channel balanced over the addresses `resolve` gives for `host:port`, refreshed every
/// `refresh`, each address reached as `http://<address>` with `endpoint`'s settings. The
/// resolving task ends when the channel and all its clones are dropped. Must be called within a
/// Tokio runtime.
pub fn balanced<R, F>(
    host: String,
    port: u16,
    refresh: Duration,
    endpoint: impl Fn(SocketAddr) -> anyhow::Result<Endpoint> + Send + 'static,
    resolve: R,
) -> Channel
where
    R: Fn(String, u16) -> F + Send + 'static,
    F: Future<Output = std::io::Result<Vec<SocketAddr>>> + Send,
{
    let (channel, changes) = Channel::balance_channel::<SocketAddr>(64);
    tokio::spawn(async move {
        let mut known: BTreeSet<SocketAddr> = BTreeSet::new();
        loop {
            match resolve(host.clone(), port).await {
                Ok(addresses) if !addresses.is_empty() => {
                    let fresh: BTreeSet<SocketAddr> = addresses.into_iter().collect();
                    for gone in known.difference(&fresh) {
                        if changes.send(Change::Remove(*gone)).await.is_err() {
                            return;
                        }
                    }
                    for new in fresh.difference(&known) {
                        match endpoint(*new) {
                            Ok(endpoint) => {
                                if changes.send(Change::Insert(*new, endpoint)).await.is_err() {
                                    return;
                                }
                            }
                            Err(error) => tracing::warn!(%error, address = %new, "peer address refused"),
                        }
                    }
                    if fresh != known {
                        tracing::info!(peer = %host, addresses = ?fresh, "peer addresses");
                    }
                    known = fresh;
                }
                // Keep calling the addresses known so far: DNS failing is no reason to stop.
                Ok(_) => tracing::warn!(peer = %host, "peer name resolves to no address"),
                Err(error) => tracing::warn!(peer = %host, %error, "peer name not resolved"),
            }
            tokio::select! {
                () = changes.closed() => return,
                () = tokio::time::sleep(refresh) => {}
            }
        }
    });
    channel
}

/// Resolves `host:port` with the system resolver.
pub async fn system_resolve(host: String, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    Ok(tokio::net::lookup_host((host.as_str(), port)).await?.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn only_a_dns_target_names_a_host_and_port() {
        assert_eq!(
            target("dns:///orders-svc-peers:50052"),
            Some(("orders-svc-peers".to_owned(), 50052))
        );
        assert_eq!(
            target("dns:orders-svc-peers:50052"),
            Some(("orders-svc-peers".to_owned(), 50052))
        );
        assert_eq!(target("http://orders-svc:50052"), None);
        assert_eq!(target("dns:///orders-svc-peers"), None, "a port is required");
        assert_eq!(
            target("dns://8.8.8.8/orders-svc-peers:50052"),
            None,
            "no DNS authority"
        );
    }

    /// A health server on a free loopback port that counts the checks it answers.
    async fn counting_server() -> (SocketAddr, Arc<Mutex<u32>>, tokio_util::sync::CancellationToken) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let calls = Arc::new(Mutex::new(0));
        let counted = Arc::clone(&calls);
        let (_reporter, health) = tonic_health::server::health_reporter();
        let stop = tokio_util::sync::CancellationToken::new();
        let shutdown = stop.clone();
        tokio::spawn(async move {
            tonic::transport::Server::builder()
                .layer(tower::layer::layer_fn(move |inner| CountCalls {
                    inner,
                    calls: Arc::clone(&counted),
                }))
                .add_service(health)
                .serve_with_incoming_shutdown(
                    tonic::transport::server::TcpIncoming::from(listener),
                    shutdown.cancelled_owned(),
                )
                .await
        });
        (address, calls, stop)
    }

    #[derive(Clone)]
    struct CountCalls<S> {
        inner: S,
        calls: Arc<Mutex<u32>>,
    }

    impl<S, B> tower::Service<http::Request<B>> for CountCalls<S>
    where
        S: tower::Service<http::Request<B>>,
    {
        type Response = S::Response;
        type Error = S::Error;
        type Future = S::Future;

        fn poll_ready(
            &mut self,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            self.inner.poll_ready(cx)
        }

        fn call(&mut self, request: http::Request<B>) -> Self::Future {
            *self.calls.lock().unwrap() += 1;
            self.inner.call(request)
        }
    }

    #[tokio::test]
    async fn calls_spread_over_every_resolved_address_and_follow_the_name_when_it_changes() {
        let (first, first_calls, _first_stop) = counting_server().await;
        let (second, second_calls, _second_stop) = counting_server().await;
        // The name resolves to both servers, then to the second only (a pod went away).
        let answers = Arc::new(Mutex::new(vec![first, second]));
        let resolved = Arc::clone(&answers);
        let channel = balanced(
            "peers.test".to_owned(),
            50052,
            Duration::from_millis(50),
            |address| Ok(Endpoint::from_shared(format!("http://{address}"))?),
            move |host, port| {
                assert_eq!((host.as_str(), port), ("peers.test", 50052));
                let addresses = resolved.lock().unwrap().clone();
                async move { Ok(addresses) }
            },
        );
        let mut client = tonic_health::pb::health_client::HealthClient::new(channel);
        for _ in 0..40 {
            client
                .check(tonic_health::pb::HealthCheckRequest::default())
                .await
                .expect("a check is answered");
        }
        let (to_first, to_second) = (*first_calls.lock().unwrap(), *second_calls.lock().unwrap());
        assert!(
            to_first > 0 && to_second > 0,
            "both addresses served: {to_first}, {to_second}"
        );

        *answers.lock().unwrap() = vec![second];
        tokio::time::sleep(Duration::from_millis(300)).await;
        let first_before = *first_calls.lock().unwrap();
        for _ in 0..20 {
            client
                .check(tonic_health::pb::HealthCheckRequest::default())
                .await
                .expect("a check is answered");
        }
        assert_eq!(
            *first_calls.lock().unwrap(),
            first_before,
            "an address no longer resolved gets no calls"
        );
    }
}
