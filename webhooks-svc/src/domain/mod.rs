//! Domain of webhooks-svc, free of SQL and gRPC: endpoints and their validation, deliveries and
//! attempts, the event body, the retry schedule, and signatures.

pub mod delivery;
pub mod endpoint;
pub mod event;
pub mod schedule;
pub mod signing;

pub use delivery::{Attempt, AttemptOutcome, Delivery, DeliveryStatus};
pub use endpoint::{Endpoint, EndpointStatus, IssuedSecret, NewEndpoint};
pub use event::WebhookEvent;
pub use schedule::{Decision, RetrySchedule};
