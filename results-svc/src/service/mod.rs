//! Use cases of results-svc. Each owns its transactions: the lab workflow of COAs (staff), the
//! customer's reads of published COAs, the public verification, and applying the events it
//! learns from (samples from orders-svc, payments from payments-svc).

mod documents;
mod news;
mod reads;
mod workflow;

pub use news::SampleNews;
pub use reads::RESULTS;
pub use workflow::Step;

use crate::document::Letterhead;
use crate::domain::signing::CoaSigner;
use sqlx::PgPool;

/// The results use cases and what they need.
#[derive(Clone)]
pub struct ResultsService {
    pool: PgPool,
    signer: CoaSigner,
    letterhead: Letterhead,
}

impl ResultsService {
    pub fn new(pool: PgPool, signer: CoaSigner, letterhead: Letterhead) -> Self {
        Self {
            pool,
            signer,
            letterhead,
        }
    }

    /// The key that signs COA contents.
    pub fn signer(&self) -> &CoaSigner {
        &self.signer
    }
}
