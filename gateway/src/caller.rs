//! The authenticated caller of a REST request: its principal and the short-lived signed token
//! that carries the principal to every service the request calls.

use platform::principal::{Principal, TokenKeys};

/// An authenticated API key, as the handlers and translation functions see it.
#[derive(Clone, Debug)]
pub struct Caller {
    pub principal: Principal,
    /// Principal token for the `authorization` metadata of outgoing gRPC calls.
    pub token: String,
}

impl Caller {
    /// Mints the principal token for `principal`.
    pub fn new(principal: Principal, keys: &TokenKeys) -> Self {
        let token = keys.mint(&principal);
        Self { principal, token }
    }
}
