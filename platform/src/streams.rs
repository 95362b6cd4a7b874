//! Names of the Redis streams and consumer groups of the mesh, who owns each stream, and the caps
//! on their length, in one place.
//!
//! Each domain service relays its outbox to one stream, `<prefix>:events:<domain>`, and is the
//! only service that writes it: consumers accept an entry only when its envelope's `source` is
//! the stream's owner ([`owner_of_stream`]); any other entry is dead-lettered unapplied. A
//! service that reacts to another domain's events reads that stream through its own consumer
//! group, named after the service. Entries that keep failing move to `<stream>:dead`.
//!
//! Caps ([`StreamCaps`]): the outbox relay stops adding to a domain stream at its cap (its rows
//! wait in the outbox table, nothing is dropped), and a consumer stops moving entries to a
//! dead-letter stream at its cap (they stay pending, unapplied). Both warn from
//! [`StreamCaps::warn_percent`] of the cap on. `docs/operations.md` describes the procedure.

/// Domain of catalog-svc.
pub const CATALOG: &str = "catalog";
/// Domain of orders-svc.
pub const ORDERS: &str = "orders";
/// Domain of payments-svc.
pub const PAYMENTS: &str = "payments";
/// Domain of shipping-svc.
pub const SHIPPING: &str = "shipping";
/// Domain of results-svc.
pub const RESULTS: &str = "results";
/// Domain of webhooks-svc (it emits no lifecycle events of its own today).
pub const WEBHOOKS: &str = "webhooks";
/// Domain of identity-svc (it emits no lifecycle events today; its revocations travel on
/// [`key_revocation_channel`] and `crate::tokens::revocations`).
pub const IDENTITY: &str = "identity";

/// Every domain that publishes events; webhooks-svc subscribes to all of them.
pub const EVENT_DOMAINS: [&str; 5] = [CATALOG, ORDERS, PAYMENTS, SHIPPING, RESULTS];

/// The service that owns each domain's stream: the only one that writes it (its relay stamps
/// envelopes with this name as `source`), and the only `source` its consumers accept.
pub const STREAM_OWNERS: [(&str, &str); 7] = [
    (CATALOG, "catalog-svc"),
    (ORDERS, "orders-svc"),
    (PAYMENTS, "payments-svc"),
    (SHIPPING, "shipping-svc"),
    (RESULTS, "results-svc"),
    (WEBHOOKS, "webhooks-svc"),
    (IDENTITY, "identity-svc"),
];

/// Field of a stream entry that holds the protobuf-encoded `EventEnvelope`.
pub const ENVELOPE_FIELD: &str = "envelope";
/// Field of a stream entry that repeats the event type, for cheap inspection with redis-cli.
pub const TYPE_FIELD: &str = "type";

/// Infix between the prefix and the domain in a stream name.
const EVENTS_INFIX: &str = ":events:";
/// Suffix of dead-letter streams.
const DEAD_SUFFIX: &str = ":dead";

/// Returns the stream name of a domain.
pub fn stream_name(prefix: &str, domain: &str) -> String {
    format!("{prefix}{EVENTS_INFIX}{domain}")
}

/// The Redis pub/sub channel on which identity-svc announces the public id of every API key it
/// revokes; every gateway replica subscribes and evicts the key from its cache. Under
/// `<prefix>:identity:`, the namespace of identity-svc, its only publisher.
pub fn key_revocation_channel(prefix: &str) -> String {
    format!("{prefix}:identity:key-revocations")
}

/// Returns the dead-letter stream of a stream.
pub fn dead_letter_stream(stream: &str) -> String {
    format!("{stream}{DEAD_SUFFIX}")
}

/// Returns the service that owns `domain`'s stream, if `domain` is one of the mesh's.
pub fn owner_of_domain(domain: &str) -> Option<&'static str> {
    STREAM_OWNERS
        .iter()
        .find(|(known, _)| *known == domain)
        .map(|(_, owner)| *owner)
}

/// The domain whose stream the service `source` owns.
pub fn domain_of_source(source: &str) -> Option<&'static str> {
    STREAM_OWNERS
        .iter()
        .find(|(_, owner)| *owner == source)
        .map(|(domain, _)| *domain)
}

/// The deployment-independent name of a domain's stream, `events:<domain>`: the
/// `messaging.destination.name` of trace spans (the prefix differs between deployments and
/// tests; the stream is the same).
pub fn destination_name(domain: &str) -> String {
    format!("events:{domain}")
}

/// The [`destination_name`] of a stream named `<prefix>:events:<domain>` (the name itself for
/// any other stream).
pub fn destination_of_stream(stream: &str) -> String {
    match stream.rsplit_once(EVENTS_INFIX) {
        Some((_, domain)) => destination_name(domain),
        None => stream.to_owned(),
    }
}

/// Returns the service that owns a domain stream named `<prefix>:events:<domain>`; `None` for
/// any other name (a dead-letter stream, an unknown domain).
pub fn owner_of_stream(stream: &str) -> Option<&'static str> {
    let (_, domain) = stream.rsplit_once(EVENTS_INFIX)?;
    owner_of_domain(domain)
}

/// Consumer group of orders-svc.
pub const GROUP_ORDERS: &str = "orders-svc";
/// Consumer group of payments-svc.
pub const GROUP_PAYMENTS: &str = "payments-svc";
/// Consumer group of catalog-svc.
pub const GROUP_CATALOG: &str = "catalog-svc";
/// Consumer group of shipping-svc.
pub const GROUP_SHIPPING: &str = "shipping-svc";
/// Consumer group of webhooks-svc.
pub const GROUP_WEBHOOKS: &str = "webhooks-svc";
/// Consumer group of results-svc.
pub const GROUP_RESULTS: &str = "results-svc";

/// Default cap of a domain stream, in entries. An entry is about 1 KB in Redis, so the cap is
/// about 1 GB per stream; housekeeping keeps streams far below it in normal operation (it trims
/// acknowledged entries after 7 days).
pub const DEFAULT_DOMAIN_STREAM_MAX_LEN: u64 = 1_000_000;
/// Default cap of a dead-letter stream, in entries: far more than a healthy mesh ever holds.
pub const DEFAULT_DEAD_LETTER_STREAM_MAX_LEN: u64 = 10_000;
/// Default share of a cap, in percent, from which its stream is reported with a warning.
pub const DEFAULT_WARN_PERCENT: u64 = 80;

/// Caps on the length of streams (settings `STREAM_MAX_LEN`, `DEAD_LETTER_STREAM_MAX_LEN`,
/// `STREAM_WARN_PERCENT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamCaps {
    /// Entries a domain stream may hold before the relay pauses.
    pub domain_max_len: u64,
    /// Entries a dead-letter stream may hold before consumers stop moving entries to it.
    pub dead_letter_max_len: u64,
    /// Share of a cap (percent) from which a warning is logged.
    pub warn_percent: u64,
}

impl Default for StreamCaps {
    fn default() -> Self {
        Self {
            domain_max_len: DEFAULT_DOMAIN_STREAM_MAX_LEN,
            dead_letter_max_len: DEFAULT_DEAD_LETTER_STREAM_MAX_LEN,
            warn_percent: DEFAULT_WARN_PERCENT,
        }
    }
}

impl StreamCaps {
    /// Reads the caps from the environment; unset values keep their defaults, and a malformed
    /// one is logged and keeps its default too (a cap must never be switched off by a typo).
    pub fn from_env() -> Self {
        let defaults = Self::default();
        let read = |name: &str, default: u64, minimum: u64| match crate::config::env_var(name) {
            None => default,
            Some(text) => match text.trim().parse::<u64>() {
                Ok(value) if value >= minimum => value,
                _ => {
                    tracing::error!(setting = name, value = %text, default, "invalid stream cap setting, using the default");
                    default
                }
            },
        };
        Self {
            domain_max_len: read("STREAM_MAX_LEN", defaults.domain_max_len, 1),
            dead_letter_max_len: read("DEAD_LETTER_STREAM_MAX_LEN", defaults.dead_letter_max_len, 1),
            warn_percent: read("STREAM_WARN_PERCENT", defaults.warn_percent, 1).min(100),
        }
    }

    /// The length from which a stream capped at `max_len` is reported with a warning.
    pub fn warn_at(&self, max_len: u64) -> u64 {
        (max_len.saturating_mul(self.warn_percent) / 100).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_domain_stream_has_exactly_one_owner_and_dead_letter_streams_have_none() {
        for domain in EVENT_DOMAINS.iter().chain([&WEBHOOKS]) {
            let stream = stream_name("lab", domain);
            let owner = owner_of_stream(&stream).expect("every domain has an owner");
            assert_eq!(owner, format!("{domain}-svc"));
            assert_eq!(owner_of_stream(&dead_letter_stream(&stream)), None);
        }
        assert_eq!(owner_of_stream("lab:events:unknown"), None);
        assert_eq!(owner_of_stream("orders"), None);
        // A prefix that itself contains the infix still names the right domain.
        assert_eq!(
            owner_of_stream("a:events:b:events:payments"),
            Some("payments-svc")
        );
    }

    #[test]
    fn the_warning_threshold_is_a_share_of_the_cap() {
        let caps = StreamCaps::default();
        assert_eq!(caps.warn_at(1_000_000), 800_000);
        assert_eq!(caps.warn_at(10), 8);
        assert_eq!(caps.warn_at(1), 1);
    }

    #[test]
    fn identity_svcs_announcements_live_under_its_own_namespace() {
        // The Redis ACL users (deploy/k8s/overlays/dev/redis-users.acl) name these.
        assert_eq!(key_revocation_channel("lab"), "lab:identity:key-revocations");
        assert_eq!(
            crate::tokens::revocations::key("lab"),
            "lab:identity:staff-revocations"
        );
    }
}
