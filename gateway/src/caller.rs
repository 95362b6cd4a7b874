//! The authenticated caller of a REST request: its principal and the gateway's token issuer,
//! which signs the principal for each service the request calls (one audience per service,
//! reused while fresh), and the request's delegation for the services those call in turn.

use http::HeaderValue;
use platform::delegation::CustomerContext;
use platform::principal::Principal;
use platform::tokens::TokenIssuer;
use std::sync::Arc;

/// An authenticated API key, as the handlers and translation functions see it.
#[derive(Clone, Debug)]
pub struct Caller {
    /// Shared with the key's cached record: a request clones a pointer, not the scopes.
    pub principal: Arc<Principal>,
    tokens: TokenIssuer,
    /// The request's `X-Request-Id`, named in its delegation.
    request_id: Option<HeaderValue>,
}

impl Caller {
    /// The caller `principal`, whose tokens `tokens` signs.
    pub fn new(principal: Arc<Principal>, tokens: TokenIssuer) -> Self {
        Self {
            principal,
            tokens,
            request_id: None,
        }
    }

    /// The same caller, for the request with id `request_id`.
    pub fn with_request_id(mut self, request_id: Option<&HeaderValue>) -> Self {
        self.request_id = request_id.cloned();
        self
    }

    /// A fresh delegation for this request (`platform::delegation`): what lets the services it
    /// calls act for the customer when they call further services. Minted for the requests that
    /// change something (a read calls no service that acts for the customer in turn).
    pub fn delegation(&self) -> Option<CustomerContext> {
        let request_id = self
            .request_id
            .as_ref()
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        let token = self.tokens.delegation(&self.principal, request_id)?;
        Some(CustomerContext::Delegation(token.into()))
    }

    /// The principal token for calls to `audience` (a service name of `platform::mesh`).
    pub fn token(&self, audience: &str) -> Arc<str> {
        self.tokens.token(&self.principal, audience)
    }
}
