//! Use cases of results-svc. Each owns its transactions: the lab workflow of COAs (staff), the
//! customer's reads of published COAs, the public verification, and applying the events it
//! learns from (samples from orders-svc, payments from payments-svc).

mod documents;
mod news;
mod reads;
mod simulate;
mod workflow;

pub use news::SampleNews;
pub use reads::RESULTS;
pub use simulate::CoaScenario;
pub use workflow::Step;

use crate::document::Letterhead;
use crate::domain::coa_keys::CoaKeys;
use platform::blobs::BlobStore;
use sqlx::PgPool;

/// The results use cases and what they need.
#[derive(Clone)]
pub struct ResultsService {
    pool: PgPool,
    /// The current key (signs new COAs and download links) and every key a COA may name.
    keys: CoaKeys,
    letterhead: Letterhead,
    /// Where each published COA's PDF is kept once rendered (`documents`).
    store: BlobStore,
}

impl ResultsService {
    pub fn new(pool: PgPool, keys: CoaKeys, letterhead: Letterhead, store: BlobStore) -> Self {
        Self {
            pool,
            keys,
            letterhead,
            store,
        }
    }

    /// The letterhead and public site URL of COA documents (and of their verify links).
    pub fn letterhead(&self) -> &Letterhead {
        &self.letterhead
    }

    /// The key set of COA contents: the current key and the previous public keys.
    pub fn keys(&self) -> &CoaKeys {
        &self.keys
    }
}
