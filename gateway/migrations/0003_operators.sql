-- Lab operators: each has their own credential (stored only as a peppered HMAC-SHA256 verifier
-- of "<public-id>:<secret>", like API keys) and the staff roles they hold. Staff tokens name the
-- operator, so the audit trail of every service names the real person.
CREATE TABLE gateway.operators (
    id UUID PRIMARY KEY,
    name TEXT NOT NULL,
    public_id TEXT NOT NULL,
    verifier BYTEA NOT NULL,
    roles TEXT[] NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    created_by TEXT NOT NULL,
    disabled_at TIMESTAMPTZ,
    disabled_by TEXT,
    CONSTRAINT operators_name_key UNIQUE (name),
    CONSTRAINT operators_public_id_key UNIQUE (public_id)
);

-- Who created and who revoked each API key, and who registered each customer (NULL before
-- operators had identities).
ALTER TABLE gateway.api_keys ADD COLUMN created_by TEXT, ADD COLUMN revoked_by TEXT;
ALTER TABLE gateway.customers ADD COLUMN created_by TEXT;
