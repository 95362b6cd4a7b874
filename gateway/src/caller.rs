//! The authenticated caller of a REST request: its principal and the gateway's token issuer,
//! which signs the principal for each service the request calls (one audience per service,
//! reused while fresh).

use platform::principal::Principal;
use platform::tokens::TokenIssuer;
use std::sync::Arc;

/// An authenticated API key, as the handlers and translation functions see it.
#[derive(Clone, Debug)]
pub struct Caller {
    /// Shared with the key's cached record: a request clones a pointer, not the scopes.
    pub principal: Arc<Principal>,
    tokens: TokenIssuer,
}

impl Caller {
    /// The caller `principal`, whose tokens `tokens` signs.
    pub fn new(principal: Arc<Principal>, tokens: TokenIssuer) -> Self {
        Self { principal, tokens }
    }

    /// The principal token for calls to `audience` (a service name of `platform::mesh`).
    pub fn token(&self, audience: &str) -> Arc<str> {
        self.tokens.token(&self.principal, audience)
    }
}
