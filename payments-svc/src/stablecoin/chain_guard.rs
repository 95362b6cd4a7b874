//! The chain-id guard: both providers must serve the configured chain (`eth_chainId` equal to
//! `PAYMENTS_CHAIN_ID`) before the rail settles anything. The scanner asks at start and before
//! every pass, a submission before it reads a receipt. A provider answering another chain id
//! halts the rail: passes are skipped (nothing observed, confirmed, reorged or expired) and
//! submissions answer 503 `chain_unavailable` with `details.reason = chain_mismatch`, until both
//! providers answer the configured id again; each halted check logs an error naming the provider
//! and both ids. A provider that does not answer is not a mismatch: it keeps its last verdict and
//! is asked again next time (meanwhile the rail answers `provider_unavailable`, as for any read).
//!
//! The gauge `stablecoin_chain_mismatch{provider="a"|"b"}` counts the rails of the process halted
//! by each provider (in a deployment: 0 or 1); the guard moves it on transitions only and gives
//! its count back when the rail is dropped.

use crate::chain::rpc::{ChainError, ProviderPair};
use std::sync::{Mutex, PoisonError};

/// The gauge's label of provider A and of provider B (bounded: the configured names are free
/// text and appear in logs only).
const PROVIDER_LABELS: [&str; 2] = ["a", "b"];

/// The verdict of the last answer of each provider.
#[derive(Debug)]
pub struct ChainGuard {
    configured: u64,
    /// Per provider (A, B): the other chain id it served at its last answer; `None` while it
    /// serves the configured chain or has never answered.
    foreign: Mutex<[Option<u64>; 2]>,
}

impl ChainGuard {
    /// A guard for `configured`; exports both providers' gauge samples.
    pub fn new(configured: u64) -> Self {
        for label in PROVIDER_LABELS {
            platform::metrics::expose_chain_mismatch(label);
        }
        Self {
            configured,
            foreign: Mutex::new([None, None]),
        }
    }

    /// Asks both providers for their chain id: `Ok` when both serve the configured chain;
    /// `WrongChain` while either served another one at its last answer; `Unavailable` when a
    /// provider did not answer (and none is known to serve another chain).
    pub async fn verify(&self, providers: &ProviderPair) -> Result<(), ChainError> {
        let (a, b) = tokio::join!(providers.a.chain_id(), providers.b.chain_id());
        self.record([a, b], [providers.a.name(), providers.b.name()])
    }

    /// Whether a provider served another chain at its last answer.
    pub fn halted(&self) -> bool {
        self.lock().iter().any(Option::is_some)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, [Option<u64>; 2]> {
        self.foreign.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records both answers (an error keeps the provider's last verdict) and returns the verdict.
    fn record(&self, answers: [Result<u64, ChainError>; 2], names: [&str; 2]) -> Result<(), ChainError> {
        let mut foreign = self.lock();
        for (index, answer) in answers.iter().enumerate() {
            let Ok(served) = answer else {
                continue;
            };
            let verdict = (*served != self.configured).then_some(*served);
            if verdict.is_some() != foreign[index].is_some() {
                platform::metrics::record_chain_mismatch(PROVIDER_LABELS[index], verdict.is_some());
                if verdict.is_none() {
                    tracing::info!(
                        provider = names[index],
                        chain_id = self.configured,
                        "the stablecoin provider serves the configured chain again"
                    );
                }
            }
            foreign[index] = verdict;
        }
        let mut halted = None;
        for (index, served) in foreign.iter().enumerate() {
            let Some(served) = *served else {
                continue;
            };
            tracing::error!(
                provider = names[index],
                configured_chain_id = self.configured,
                served_chain_id = served,
                "the stablecoin rail is halted: provider {} serves chain id {served}, not the configured chain id {}; nothing is settled until both providers serve it",
                names[index],
                self.configured,
            );
            halted.get_or_insert(ChainError::WrongChain {
                provider: names[index].to_owned(),
                served,
                configured: self.configured,
            });
        }
        drop(foreign);
        if let Some(error) = halted {
            return Err(error);
        }
        let [a, b] = answers;
        a?;
        b?;
        Ok(())
    }
}

impl Drop for ChainGuard {
    /// A dropped rail no longer counts as halted.
    fn drop(&mut self) {
        for (index, served) in self.lock().iter().enumerate() {
            if served.is_some() {
                platform::metrics::record_chain_mismatch(PROVIDER_LABELS[index], false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 2] = ["node-a", "node-b"];

    fn gauge(provider: &'static str) -> i64 {
        platform::metrics::metrics()
            .stablecoin_chain_mismatch
            .get_or_create(&platform::metrics::ChainProviderLabels { provider })
            .get()
    }

    fn down(provider: &str) -> Result<u64, ChainError> {
        Err(ChainError::Unavailable {
            provider: provider.to_owned(),
            cause: "connection refused".to_owned(),
        })
    }

    #[test]
    fn another_chain_halts_until_both_serve_the_configured_one_and_a_silent_provider_keeps_its_verdict() {
        // The only test of this binary that moves the gauge: its counts are exact here.
        let guard = ChainGuard::new(1);
        assert_eq!((gauge("a"), gauge("b")), (0, 0), "exported at 0 from the start");
        assert_eq!(guard.record([Ok(1), Ok(1)], NAMES), Ok(()));

        let halted = guard.record([Ok(1), Ok(11_155_111)], NAMES);
        assert_eq!(
            halted,
            Err(ChainError::WrongChain {
                provider: "node-b".into(),
                served: 11_155_111,
                configured: 1,
            })
        );
        assert!(guard.halted());
        assert_eq!((gauge("a"), gauge("b")), (0, 1));
        // Asked again with the same answer: still halted, counted once.
        assert!(guard.record([Ok(1), Ok(11_155_111)], NAMES).is_err());
        assert_eq!(gauge("b"), 1);
        // Silent now: not taken for a match, the rail stays halted.
        assert!(matches!(
            guard.record([Ok(1), down("node-b")], NAMES),
            Err(ChainError::WrongChain { .. })
        ));
        assert_eq!(gauge("b"), 1);

        assert_eq!(guard.record([Ok(1), Ok(1)], NAMES), Ok(()));
        assert!(!guard.halted());
        assert_eq!((gauge("a"), gauge("b")), (0, 0));

        // Unreachable while matching: unavailable, never a mismatch.
        assert!(matches!(
            guard.record([down("node-a"), Ok(1)], NAMES),
            Err(ChainError::Unavailable { .. })
        ));
        assert!(!guard.halted());
        assert_eq!(gauge("a"), 0);

        // A rail dropped while halted gives its count back.
        assert!(guard.record([Ok(5), Ok(1)], NAMES).is_err());
        assert_eq!(gauge("a"), 1);
        drop(guard);
        assert_eq!(gauge("a"), 0);
    }
}
