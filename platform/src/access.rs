//! Who may call which rpc: one table per gRPC service, enforced by one tower layer in front of
//! the tonic server before any handler runs, so that no handler checks scopes or roles itself.
//!
//! The layer reads the bearer token, verifies it for this service's audience
//! (`crate::tokens::TokenVerifier`), looks the rpc up in the service's [`AccessTable`] (an rpc
//! missing from the table is refused: the table is closed) and checks the principal against the
//! rule: a customer needs every listed scope, an operator the listed role, a service must be
//! named in the rule. The principal is then handed to the handler in the request extensions
//! (`crate::grpc::principal`).
//!
//! A service principal that names a customer is admitted only with proof that it was asked to
//! serve that customer: a gateway delegation or a signed event of that customer in the call's
//! metadata (`crate::delegation`), verified here. Whatever proof a call arrived with, its handler
//! runs inside it, so the calls it makes in turn carry it on.

use crate::delegation::{CustomerAuthority, CustomerContext};
use crate::error::{ApiError, ErrorCode};
use crate::event_signing::EventVerifier;
use crate::principal::{Principal, PrincipalKind};
use crate::tokens::TokenVerifier;
use futures::future::{Either, Ready, ready};
use std::task::{Context, Poll};
use tokio::task::futures::TaskLocalFuture;
use tonic::Status;
use tonic::server::NamedService;

/// Who may call one rpc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// API keys holding every one of these scopes (none: API keys may not call).
    pub scopes: &'static [&'static str],
    /// Operators holding this role.
    pub role: Option<&'static str>,
    /// Services of the mesh (by name) that may call, acting for a customer.
    pub services: &'static [&'static str],
    /// Any operator, whatever roles their token carries.
    pub any_operator: bool,
    /// Anyone, without a token (the handler authenticates by other means).
    pub public: bool,
    /// API keys holding at least one of `scopes` suffice (a lookup several operations share,
    /// each of which the gateway admits with its own scope).
    pub any_scope: bool,
    /// Only API keys of sandbox customers (`Principal::sandbox`); any other API key gets
    /// `not_found`, as if the rpc did not exist (the simulation, docs/sandbox.md).
    pub sandbox_only: bool,
}

/// An rpc for API keys holding `scopes`.
pub const fn customer(scopes: &'static [&'static str]) -> Rule {
    Rule {
        scopes,
        role: None,
        services: &[],
        any_operator: false,
        public: false,
        any_scope: false,
        sandbox_only: false,
    }
}

/// An rpc for API keys holding at least one of `scopes`.
pub const fn customer_any(scopes: &'static [&'static str]) -> Rule {
    Rule {
        any_scope: true,
        ..customer(scopes)
    }
}

/// An rpc for operators holding `role`.
pub const fn staff(role: &'static str) -> Rule {
    Rule {
        scopes: &[],
        role: Some(role),
        services: &[],
        any_operator: false,
        public: false,
        any_scope: false,
        sandbox_only: false,
    }
}

/// An rpc for the named services only.
pub const fn services(names: &'static [&'static str]) -> Rule {
    Rule {
        scopes: &[],
        role: None,
        services: names,
        any_operator: false,
        public: false,
        any_scope: false,
        sandbox_only: false,
    }
}

/// An rpc for any authenticated operator (read-only operational views).
pub const ANY_OPERATOR: Rule = Rule {
    scopes: &[],
    role: None,
    services: &[],
    any_operator: true,
    public: false,
    any_scope: false,
    sandbox_only: false,
};

/// An rpc without a token (its handler authenticates the caller itself).
pub const PUBLIC: Rule = Rule {
    scopes: &[],
    role: None,
    services: &[],
    any_operator: false,
    public: true,
    any_scope: false,
    sandbox_only: false,
};

impl Rule {
    /// Also admits operators holding `role`.
    pub const fn or_staff(self, role: &'static str) -> Rule {
        Rule {
            role: Some(role),
            ..self
        }
    }

    /// Admits API keys of sandbox customers only (others get `not_found`).
    pub const fn sandbox_only(self) -> Rule {
        Rule {
            sandbox_only: true,
            ..self
        }
    }

    /// Also admits the named services.
    pub const fn or_services(self, names: &'static [&'static str]) -> Rule {
        Rule {
            services: names,
            ..self
        }
    }

    /// Checks `principal` against the rule.
    pub fn check(&self, principal: &Principal) -> Result<(), ApiError> {
        if self.sandbox_only && principal.kind == PrincipalKind::Customer && !principal.sandbox {
            return Err(ApiError::new(ErrorCode::NotFound, "not found"));
        }
        match principal.kind {
            PrincipalKind::Customer if self.any_scope && !self.scopes.is_empty() => {
                if self
                    .scopes
                    .iter()
                    .any(|scope| principal.scopes.iter().any(|held| held == scope))
                {
                    Ok(())
                } else {
                    Err(ApiError::new(
                        ErrorCode::InsufficientScope,
                        format!("the API key needs one of the scopes {}", self.scopes.join(", ")),
                    )
                    .with_details(serde_json::json!({ "anyOf": self.scopes })))
                }
            }
            PrincipalKind::Customer if !self.scopes.is_empty() => {
                require_scopes(self.scopes, &principal.scopes)
            }
            PrincipalKind::Staff if self.any_operator => Ok(()),
            PrincipalKind::Staff => match self.role {
                Some(role) if principal.roles.iter().any(|held| held == role) => Ok(()),
                Some(role) => Err(ApiError::new(
                    ErrorCode::Forbidden,
                    format!("this operation needs the staff role {role}"),
                )),
                None => Err(forbidden()),
            },
            PrincipalKind::Service if self.services.contains(&principal.subject.as_str()) => Ok(()),
            PrincipalKind::Customer | PrincipalKind::Service => Err(forbidden()),
        }
    }
}

/// Checks that an API key holding `held` has every scope of `required`; otherwise 403
/// `insufficient_scope` with `details.required` (all of `required`) and `details.missing`. The one
/// place that answers a missing scope: access tables, the gateway's operation table and the
/// webhook subscription rule all come here.
pub fn require_scopes(required: &[&str], held: &[String]) -> Result<(), ApiError> {
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|scope| !held.iter().any(|held| held == scope))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::InsufficientScope,
        format!("the API key lacks the {} scope", missing.join(" and ")),
    )
    .with_details(serde_json::json!({ "required": required, "missing": missing })))
}

/// The webhook subscription rule (`proto::event_data::subscription_scopes`) for an API key
/// holding `held`: 400 `unknown_event` naming `events[i]`, or 403 `insufficient_scope` naming
/// every required and every missing scope.
pub fn require_subscription(events: &[String], held: &[String]) -> Result<(), ApiError> {
    let required = proto::event_data::subscription_scopes(events)?;
    require_scopes(&required, held).map_err(|mut error| {
        error.message = format!("{} that the selected events need", error.message);
        error
    })
}

fn forbidden() -> ApiError {
    ApiError::new(ErrorCode::Forbidden, "the caller may not perform this operation")
}

/// The access rules of every rpc of one gRPC service, by method name (`GetQuote`).
pub type AccessTable = &'static [(&'static str, Rule)];

/// Returns `service` guarded by `table`, verifying tokens with `verifier`. Signed events are
/// accepted as a service's customer context only once [`Guarded::for_streams`] names this
/// deployment's stream prefix.
pub fn guarded<S>(service: S, verifier: TokenVerifier, table: AccessTable) -> Guarded<S> {
    let events = EventVerifier::new(verifier.trusted_keys().clone());
    Guarded {
        inner: service,
        authority: CustomerAuthority::new(verifier.clone(), events, ""),
        verifier,
        table,
    }
}

/// A gRPC service behind its access table.
#[derive(Clone)]
pub struct Guarded<S> {
    inner: S,
    verifier: TokenVerifier,
    authority: CustomerAuthority,
    table: AccessTable,
}

impl<S> Guarded<S> {
    /// Accepts signed events of the streams under `stream_prefix` as customer contexts.
    pub fn for_streams(mut self, stream_prefix: &str) -> Self {
        let events = EventVerifier::new(self.verifier.trusted_keys().clone());
        self.authority = CustomerAuthority::new(self.verifier.clone(), events, stream_prefix);
        self
    }
}

impl<S: NamedService> NamedService for Guarded<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Guarded<S> {
    /// Authenticates and authorizes a request (`None` for a public rpc), with the customer
    /// context it carries: verified for a service principal that names a customer, passed on as
    /// it came otherwise.
    fn authorize<B>(
        &self,
        request: &http::Request<B>,
    ) -> Result<(Option<Principal>, Option<CustomerContext>), ApiError> {
        let method = request.uri().path().rsplit('/').next().unwrap_or_default();
        let Some((_, rule)) = self.table.iter().find(|(name, _)| *name == method) else {
            tracing::error!(rpc = %request.uri().path(), "an rpc is missing from the access table");
            return Err(forbidden());
        };
        if rule.public {
            return Ok((None, None));
        }
        let token = request
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .ok_or_else(|| ApiError::new(ErrorCode::Unauthenticated, "missing principal token"))?;
        let principal = self.verifier.verify(token)?;
        rule.check(&principal)?;
        let context = CustomerContext::from_headers(request.headers());
        if let (PrincipalKind::Service, Some(customer_id)) = (principal.kind, principal.customer_id) {
            self.authority
                .verify(context.as_ref(), customer_id)
                .inspect_err(|error| {
                    tracing::warn!(
                        service = %principal.subject,
                        customer = %customer_id,
                        rpc = %request.uri().path(),
                        reason = %error.message,
                        "a service's call for a customer was refused"
                    );
                })?;
        }
        Ok((Some(principal), context))
    }
}

impl<S, B, R> tower::Service<http::Request<B>> for Guarded<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    R: Default,
{
    type Response = http::Response<R>;
    type Error = S::Error;
    type Future = Either<
        Either<S::Future, TaskLocalFuture<CustomerContext, S::Future>>,
        Ready<Result<http::Response<R>, S::Error>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        match self.authorize(&request) {
            Ok((principal, context)) => {
                if let Some(principal) = principal {
                    request.extensions_mut().insert(principal);
                }
                let call = self.inner.call(request);
                match context {
                    // The handler, and every call it makes, acts in the context it came with.
                    Some(context) => {
                        Either::Left(Either::Right(crate::delegation::acting_for(context, call)))
                    }
                    None => Either::Left(Either::Left(call)),
                }
            }
            Err(error) => Either::Right(ready(Ok(Status::from(error).into_http()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    const READ: Rule = customer(&["orders:read"]);

    fn key(scopes: &[&str]) -> Principal {
        Principal {
            kind: PrincipalKind::Customer,
            subject: "key".into(),
            customer_id: Some(Uuid::nil()),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            roles: vec![],
            spend_limit_cents: None,
            operator_id: None,
            credential_id: None,
            sandbox: false,
        }
    }

    fn operator(roles: &[&str]) -> Principal {
        Principal {
            kind: PrincipalKind::Staff,
            subject: "alice".into(),
            customer_id: None,
            scopes: vec![],
            roles: roles.iter().map(|s| (*s).to_owned()).collect(),
            spend_limit_cents: None,
            operator_id: Some(Uuid::nil()),
            credential_id: None,
            sandbox: false,
        }
    }

    #[test]
    fn a_customer_needs_every_scope_of_the_rule() {
        assert!(READ.check(&key(&["orders:read"])).is_ok());
        let error = READ.check(&key(&["orders:write"])).unwrap_err();
        assert_eq!(error.code, ErrorCode::InsufficientScope);
        assert_eq!(error.details.unwrap()["missing"][0], "orders:read");
        assert_eq!(
            staff("payments.admin")
                .check(&key(&["orders:read"]))
                .unwrap_err()
                .code,
            ErrorCode::Forbidden
        );
    }

    #[test]
    fn a_sandbox_only_rule_answers_not_found_to_a_live_customer_and_admits_a_sandbox_one() {
        let rule = READ.sandbox_only();
        let live = key(&["orders:read"]);
        assert_eq!(rule.check(&live).unwrap_err().code, ErrorCode::NotFound);
        let sandbox = Principal {
            sandbox: true,
            ..live
        };
        assert!(rule.check(&sandbox).is_ok());
        let no_scope = Principal {
            scopes: vec![],
            ..sandbox
        };
        assert_eq!(
            rule.check(&no_scope).unwrap_err().code,
            ErrorCode::InsufficientScope
        );
        assert_eq!(
            rule.check(&operator(&["lab.qa"])).unwrap_err().code,
            ErrorCode::Forbidden
        );
    }

    #[test]
    fn a_customer_needs_one_scope_of_an_any_scope_rule() {
        let rule = customer_any(&["orders:read", "raw_data:read"]);
        assert!(rule.check(&key(&["raw_data:read"])).is_ok());
        assert!(rule.check(&key(&["orders:read", "webhooks:read"])).is_ok());
        let error = rule.check(&key(&["webhooks:read"])).unwrap_err();
        assert_eq!(error.code, ErrorCode::InsufficientScope);
        assert_eq!(
            error.details.unwrap()["anyOf"],
            serde_json::json!(["orders:read", "raw_data:read"])
        );
        assert_eq!(
            rule.check(&operator(&["lab.qa"])).unwrap_err().code,
            ErrorCode::Forbidden
        );
    }

    #[test]
    fn a_subscription_needs_webhooks_write_and_the_read_scope_of_every_event() {
        let events: Vec<String> = ["order.created", "payment.confirmed", "order.status_changed"]
            .map(str::to_owned)
            .to_vec();
        let held: Vec<String> = vec!["webhooks:write".into(), "orders:read".into()];
        let error = require_subscription(&events, &held).unwrap_err();
        assert_eq!(error.code, ErrorCode::InsufficientScope);
        assert!(error.message.ends_with("that the selected events need"));
        let details = error.details.unwrap();
        assert_eq!(details["missing"], serde_json::json!(["payments:read"]));
        assert_eq!(
            details["required"],
            serde_json::json!(["webhooks:write", "orders:read", "payments:read"])
        );
        let unknown = vec!["order.created".to_owned(), "payment.succeeded".to_owned()];
        let error = require_subscription(&unknown, &held).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnknownEvent);
        assert_eq!(error.details.unwrap()["field"], "events[1]");
    }

    #[test]
    fn a_service_passes_only_where_it_is_named() {
        let orders = Principal::service("orders-svc", Some(Uuid::nil()));
        assert_eq!(READ.check(&orders).unwrap_err().code, ErrorCode::Forbidden);
        assert!(READ.or_services(&["orders-svc"]).check(&orders).is_ok());
        let webhooks = Principal::service("webhooks-svc", Some(Uuid::nil()));
        assert!(READ.or_services(&["orders-svc"]).check(&webhooks).is_err());
    }

    #[test]
    fn an_operator_needs_the_role_of_the_rule() {
        assert!(
            staff("payments.admin")
                .check(&operator(&["payments.admin"]))
                .is_ok()
        );
        assert!(
            staff("payments.admin")
                .check(&operator(&["catalog.admin"]))
                .is_err()
        );
        assert!(READ.check(&operator(&["payments.admin"])).is_err());
        assert!(
            READ.or_staff("webhooks.admin")
                .check(&operator(&["webhooks.admin"]))
                .is_ok()
        );
    }
}
