//! Integration tests of results-svc over gRPC, against the real PostgreSQL and Redis: the lab
//! workflow's refusals and repeats, the payment gate of publication, retraction and amendment
//! links, the tenant isolation of the customer's reads, the revocation of staff tokens, the
//! instrument and method registries, and the consent-gated COA email (a real SMTP server).

mod data;
mod documents;
mod helpers;
mod notifications;
mod reads;
mod registry;
mod staff_tokens;
mod workflow;
