-- Identity, owned by the gateway: customers and their API keys. A key is stored only as a
-- peppered HMAC-SHA256 verifier of "<public-id>:<secret>"; the plaintext is shown once.
CREATE TABLE gateway.customers (
    id UUID PRIMARY KEY,
    name TEXT NOT NULL,
    -- Stored trimmed and lowercased, so one address is one customer.
    email TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT customers_email_key UNIQUE (email)
);

CREATE TABLE gateway.api_keys (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL REFERENCES gateway.customers (id),
    public_id TEXT NOT NULL,
    verifier BYTEA NOT NULL,
    name TEXT NOT NULL,
    scopes TEXT[] NOT NULL,
    spend_limit_cents BIGINT CHECK (spend_limit_cents >= 0),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ,
    CONSTRAINT api_keys_public_id_key UNIQUE (public_id)
);
CREATE INDEX api_keys_customer ON gateway.api_keys (customer_id, created_at);
