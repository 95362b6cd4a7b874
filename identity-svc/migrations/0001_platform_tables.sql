-- Platform tables every service schema carries: the transactional outbox, the record of
-- processed events (idempotent consumers) and the idempotency keys of mutating requests.
CREATE TABLE identity.outbox (
    id BIGSERIAL PRIMARY KEY,
    event_id UUID NOT NULL UNIQUE,
    event_type TEXT NOT NULL,
    envelope BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    published_at TIMESTAMPTZ
);
CREATE INDEX outbox_unpublished ON identity.outbox (id) WHERE published_at IS NULL;

CREATE TABLE identity.processed_events (
    consumer TEXT NOT NULL,
    event_id UUID NOT NULL,
    processed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

CREATE TABLE identity.idempotency_keys (
    customer_id UUID NOT NULL,
    operation TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint BYTEA NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
    owner UUID NOT NULL,
    locked_until TIMESTAMPTZ NOT NULL,
    recovery JSONB,
    outcome BYTEA,
    outcome_error JSONB,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, operation, idempotency_key)
);
