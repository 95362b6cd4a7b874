//! The gateway's HTTP server: what `axum::serve` does (accept, HTTP/1.1 and HTTP/2 by what the
//! client speaks, the peer address as `ConnectInfo`, graceful shutdown that stops accepting and
//! lets open connections finish), with `TCP_NODELAY` on every connection and one change to how a
//! connection's task is woken ([`RepollSelfWakes`]).
//!
//! Why not `axum::serve`: hyper's HTTP/1 connection reads a request's body into a channel, and the
//! handler's first read of that channel wakes the connection's task (the channel's sender side,
//! already finished with a body that fit in one read) while the handler runs inside that very
//! task. Tokio treats a task woken during its own poll as a yield: it goes to the back of the run
//! queue and an idle worker thread is woken to steal it, two futex calls and two context switches
//! per request with a body. `perf stat` on the mesh benchmark counted them: 2.0 futex calls and
//! 3.8 context switches per `POST /api/mcp` (or per `GET` carrying a body) against 0.02 and 2.0
//! per bodiless `GET`, and they made the MCP read 10–20 % slower than its REST twin. Here a
//! connection's future is polled again at once when it wakes itself, which costs one more poll
//! of the connection and no thread.

use axum::Router;
use axum::extract::ConnectInfo;
use futures::task::AtomicWaker;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// Serves `app` on `listener` until `shutdown` completes; then stops accepting, asks every open
/// connection to finish (an HTTP/1.1 connection closes after its request in flight, an HTTP/2
/// one sends GOAWAY) and returns once all have closed.
pub async fn serve(listener: TcpListener, app: Router, shutdown: impl Future<Output = ()>) {
    let closing = CancellationToken::new();
    let connections = TaskTracker::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    wait_after_accept_error(&error).await;
                    continue;
                }
            },
            () = shutdown.as_mut() => break,
        };
        // No Nagle stall behind a delayed ACK.
        let _ = stream.set_nodelay(true);
        connections.spawn(serve_connection(stream, peer, app.clone(), closing.clone()));
    }
    drop(listener);
    closing.cancel();
    connections.close();
    connections.wait().await;
}

/// A failed `accept`: an aborted connection is skipped at once; anything else (out of file
/// descriptors, say) is logged and retried after a pause, as `axum::serve` does.
async fn wait_after_accept_error(error: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "accepting an HTTP connection failed; retrying in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// One connection, until it closes or, once `closing` fires, finishes what it has in flight.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    closing: CancellationToken,
) {
    let service = tower::service_fn(move |mut request: http::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        app.clone().oneshot(request)
    });
    let builder = Builder::new(TokioExecutor::new());
    let connection =
        builder.serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service));
    let mut connection = RepollSelfWakes::new(connection);
    let outcome = tokio::select! {
        outcome = &mut connection => outcome,
        () = closing.cancelled() => {
            connection.inner().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = outcome {
        tracing::debug!(%peer, %error, "HTTP connection ended with an error");
    }
}

/// How many times in a row a future that woke itself is polled again before it goes through the
/// scheduler like any woken task (so that one that keeps yielding still lets others run).
const REPOLLS: usize = 2;

/// A future that, when it wakes itself during its own poll, is polled again at once (up to
/// [`REPOLLS`] times) instead of being handed back to the scheduler. Wakes from elsewhere (I/O
/// readiness, another task) reach the task's waker as usual; one that comes while the future is
/// being polled is not lost either: it is seen when the poll ends and leads to the same
/// immediate poll.
pub struct RepollSelfWakes<F> {
    inner: Pin<Box<F>>,
    state: Arc<WakeState>,
    waker: Waker,
}

/// What the waker given to the inner future shares with [`RepollSelfWakes::poll`].
#[derive(Default)]
struct WakeState {
    /// The inner future is being polled.
    polling: AtomicBool,
    /// Woken since the current poll began.
    woken: AtomicBool,
    /// The task's own waker, for wakes while the inner future is not being polled.
    task: AtomicWaker,
}

impl Wake for WakeState {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Sequentially consistent with `poll`: either this sees `polling` cleared and wakes the
        // task, or `poll` sees `woken` set and polls again (or both, which is harmless).
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            self.task.wake();
        }
    }
}

impl<F: Future> RepollSelfWakes<F> {
    pub fn new(inner: F) -> Self {
        let state = Arc::new(WakeState::default());
        Self {
            inner: Box::pin(inner),
            waker: Waker::from(Arc::clone(&state)),
            state,
        }
    }

    /// The wrapped future.
    pub fn inner(&mut self) -> Pin<&mut F> {
        self.inner.as_mut()
    }
}

impl<F: Future> Future for RepollSelfWakes<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        // Registered before the inner future is polled: a wake from now on is either seen by
        // that poll or reaches the task.
        this.state.task.register(cx.waker());
        let mut context = Context::from_waker(&this.waker);
        for _ in 0..=REPOLLS {
            // `woken` is cleared before `polling` is set: a wake in between reaches the task.
            this.state.woken.store(false, Ordering::SeqCst);
            this.state.polling.store(true, Ordering::SeqCst);
            let poll = this.inner.as_mut().poll(&mut context);
            this.state.polling.store(false, Ordering::SeqCst);
            if poll.is_ready() {
                return poll;
            }
            if !this.state.woken.swap(false, Ordering::SeqCst) {
                return Poll::Pending;
            }
        }
        // Still waking itself: a yield, through the scheduler.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts the task's wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A task's waker, and how many times it was woken.
    fn task() -> (Waker, Arc<Count>) {
        let count = Arc::new(Count::default());
        (Waker::from(Arc::clone(&count)), count)
    }

    /// [`Yielding`] wrapped, and its count of polls.
    fn repolled_yielding(yields: usize) -> (RepollSelfWakes<Yielding>, Arc<AtomicUsize>) {
        let polls = Arc::new(AtomicUsize::new(0));
        let future = RepollSelfWakes::new(Yielding {
            yields,
            polls: Arc::clone(&polls),
        });
        (future, polls)
    }

    /// Wakes itself on each of its first `yields` polls, then is ready; counts its polls.
    struct Yielding {
        yields: usize,
        polls: Arc<AtomicUsize>,
    }

    impl Future for Yielding {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            if self.yields == 0 {
                return Poll::Ready(());
            }
            self.yields -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    #[test]
    fn a_future_that_wakes_itself_is_polled_again_at_once_and_the_task_is_not_woken() {
        let (waker, task) = task();
        let (future, polls) = repolled_yielding(1);
        let mut future = std::pin::pin!(future);
        assert!(future.as_mut().poll(&mut Context::from_waker(&waker)).is_ready());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
        assert_eq!(task.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_future_that_keeps_waking_itself_yields_through_the_task_after_the_repolls() {
        let (waker, task) = task();
        let (future, polls) = repolled_yielding(10);
        let mut future = std::pin::pin!(future);
        assert!(
            future
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        assert_eq!(polls.load(Ordering::SeqCst), REPOLLS + 1);
        assert_eq!(
            task.0.load(Ordering::SeqCst),
            1,
            "the task was woken to poll it later"
        );
    }

    #[test]
    fn a_wake_from_elsewhere_while_pending_reaches_the_task() {
        let (waker, task) = task();
        let (sender, receiver) = std::sync::mpsc::channel::<Waker>();
        // Pending once, handing its waker out; ready on the next poll.
        let mut handed = false;
        let mut future = std::pin::pin!(RepollSelfWakes::new(std::future::poll_fn(move |cx| {
            if handed {
                return Poll::Ready(());
            }
            handed = true;
            sender.send(cx.waker().clone()).unwrap();
            Poll::Pending
        })));
        assert!(
            future
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        assert_eq!(task.0.load(Ordering::SeqCst), 0);
        let inner_waker = receiver.recv().unwrap();
        std::thread::spawn(move || inner_waker.wake()).join().unwrap();
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
        assert!(future.as_mut().poll(&mut Context::from_waker(&waker)).is_ready());
    }
}
