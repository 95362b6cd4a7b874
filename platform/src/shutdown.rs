//! The one shutdown token of a process: cancelled on SIGTERM or SIGINT, passed explicitly to
//! servers, relays and consumers, which drain within a bounded grace period.

use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long servers and workers may take to drain after the token fires.
pub const GRACE_PERIOD: Duration = Duration::from_secs(10);

/// Returns a token that is cancelled when the process receives SIGTERM or SIGINT.
pub fn signal_token() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown signal received, draining");
        trigger.cancel();
    });
    token
}

async fn wait_for_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// Waits for `task` to finish, at most [`GRACE_PERIOD`]; logs when the grace period runs out.
pub async fn drain<F: std::future::Future>(what: &str, task: F) -> Option<F::Output> {
    match tokio::time::timeout(GRACE_PERIOD, task).await {
        Ok(output) => Some(output),
        Err(_) => {
            tracing::warn!(what, "grace period ran out before draining finished");
            None
        }
    }
}
