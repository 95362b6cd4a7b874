-- Endpoints with their sealed signing secrets, the stored events (exact body bytes, kept 30 days
-- for replays), one delivery per event and endpoint, and every attempt of every delivery.
CREATE TABLE webhooks.endpoints (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    url TEXT NOT NULL,
    events TEXT[] NOT NULL,
    description TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'disabled', 'deleted')),
    disabled_reason TEXT,
    -- Signing secrets sealed with AES-256-GCM (see keyring.rs): v1:<key-id>:<nonce+ciphertext>.
    secret_sealed TEXT NOT NULL,
    secret_key_id TEXT NOT NULL,
    previous_secret_sealed TEXT,
    previous_secret_key_id TEXT,
    previous_secret_expires_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX endpoints_by_customer ON webhooks.endpoints (customer_id, created_at DESC, id DESC);
CREATE INDEX endpoints_active_by_customer ON webhooks.endpoints (customer_id) WHERE status = 'active';

CREATE TABLE webhooks.events (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    type TEXT NOT NULL,
    occurred_at TIMESTAMPTZ NOT NULL,
    body BYTEA NOT NULL,
    traceparent TEXT NOT NULL DEFAULT '',
    tracestate TEXT NOT NULL DEFAULT '',
    stored_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX events_by_customer_time ON webhooks.events (customer_id, occurred_at);
CREATE INDEX events_by_stored_at ON webhooks.events (stored_at);

CREATE TABLE webhooks.deliveries (
    id UUID PRIMARY KEY,
    endpoint_id UUID NOT NULL REFERENCES webhooks.endpoints (id),
    customer_id UUID NOT NULL,
    event_id UUID NOT NULL REFERENCES webhooks.events (id) ON DELETE CASCADE,
    event_type TEXT NOT NULL,
    -- fanout: from the streams; test: SendTestDelivery; replay: ReplayEvents (same event id).
    origin TEXT NOT NULL CHECK (origin IN ('fanout', 'test', 'replay')),
    status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'dead', 'abandoned')),
    attempt_count INT NOT NULL DEFAULT 0,
    -- attempt_count when the delivery was last (re)queued; the schedule restarts from there.
    round_start INT NOT NULL DEFAULT 0,
    -- Due time while pending; while an attempt runs, the end of its lease.
    next_attempt_at TIMESTAMPTZ,
    lease_token UUID,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- One fan-out delivery per event and endpoint, however often the event is redelivered.
CREATE UNIQUE INDEX deliveries_fanout_once ON webhooks.deliveries (endpoint_id, event_id) WHERE origin = 'fanout';
CREATE INDEX deliveries_due ON webhooks.deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_by_endpoint ON webhooks.deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX deliveries_dead ON webhooks.deliveries (endpoint_id) WHERE status = 'dead';

CREATE TABLE webhooks.delivery_attempts (
    delivery_id UUID NOT NULL REFERENCES webhooks.deliveries (id) ON DELETE CASCADE,
    attempt_number INT NOT NULL,
    attempted_at TIMESTAMPTZ NOT NULL,
    status_code INT,
    latency_ms BIGINT NOT NULL,
    error TEXT,
    outcome TEXT NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
    PRIMARY KEY (delivery_id, attempt_number)
);
