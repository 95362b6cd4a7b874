-- Identity: customers and their API keys, lab operators and the revocations of their staff tokens.
-- A key or an operator credential is stored only as a peppered HMAC-SHA256 verifier of
-- "<public-id>:<secret>"; the plaintext is shown once.
--
-- Until identity-svc existed these tables lived in the gateway's schema (its migrations 0002 to
-- 0004). A database that has them keeps its rows: they move here with ALTER TABLE ... SET SCHEMA
-- (indexes, constraints, the identity sequence and the grants move with them, the rows are not
-- copied), in this migration's transaction. The gateway release before identity-svc applied all
-- three of those migrations at start; a database with only part of them is refused, upgrade
-- through that release first. A database without them gets the tables created in their final
-- shape. docs/operations.md, "identity-svc: moving the gateway's identity tables".
DO $$
BEGIN
    IF to_regclass('gateway.customers') IS NOT NULL THEN
        IF to_regclass('gateway.staff_revocations') IS NULL THEN
            RAISE EXCEPTION 'gateway.customers exists but gateway.staff_revocations does not: run the previous gateway release once (its migrations 0003 and 0004) before identity-svc';
        END IF;
        ALTER TABLE gateway.customers SET SCHEMA identity;
        ALTER TABLE gateway.api_keys SET SCHEMA identity;
        ALTER TABLE gateway.operators SET SCHEMA identity;
        ALTER TABLE gateway.staff_revocations SET SCHEMA identity;
        RETURN;
    END IF;

    CREATE TABLE identity.customers (
        id UUID PRIMARY KEY,
        name TEXT NOT NULL,
        -- Stored trimmed and lowercased, so one address is one customer.
        email TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        -- The operator who registered the customer (NULL before operators had identities).
        created_by TEXT,
        CONSTRAINT customers_email_key UNIQUE (email)
    );

    CREATE TABLE identity.api_keys (
        id UUID PRIMARY KEY,
        customer_id UUID NOT NULL REFERENCES identity.customers (id),
        public_id TEXT NOT NULL,
        verifier BYTEA NOT NULL,
        name TEXT NOT NULL,
        scopes TEXT[] NOT NULL,
        spend_limit_cents BIGINT CHECK (spend_limit_cents >= 0),
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        revoked_at TIMESTAMPTZ,
        last_used_at TIMESTAMPTZ,
        -- Who created and who revoked the key.
        created_by TEXT,
        revoked_by TEXT,
        CONSTRAINT api_keys_public_id_key UNIQUE (public_id)
    );
    CREATE INDEX api_keys_customer ON identity.api_keys (customer_id, created_at);

    -- Lab operators: each has their own credential and the staff roles they hold. Staff tokens
    -- name the operator, so the audit trail of every service names the real person.
    --
    -- A new operator holding lab.qa or identity.admin waits for a second admin's approval
    -- ('pending'), without any credential: the approval creates it. created_by_id and
    -- approved_by_id are operator ids (NULL: registered by `identity-svc bootstrap-operator`, by
    -- the development run, or before operators had ids in tokens), so four eyes on an approval
    -- compares operators, not names (docs/security.md, "Lab operators").
    CREATE TABLE identity.operators (
        id UUID PRIMARY KEY,
        name TEXT NOT NULL,
        public_id TEXT,
        verifier BYTEA,
        roles TEXT[] NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        created_by TEXT NOT NULL,
        disabled_at TIMESTAMPTZ,
        disabled_by TEXT,
        status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('pending', 'active')),
        created_by_id UUID,
        approved_by TEXT,
        approved_by_id UUID,
        approved_at TIMESTAMPTZ,
        CONSTRAINT operators_name_key UNIQUE (name),
        CONSTRAINT operators_public_id_key UNIQUE (public_id),
        CONSTRAINT operators_credential_once_active CHECK (
            (status = 'pending') = (public_id IS NULL) AND (public_id IS NULL) = (verifier IS NULL))
    );

    -- Revocations of staff tokens already issued: every token of a disabled operator
    -- (credential_public_id NULL), or every token issued for a rotated credential. identity-svc
    -- writes the recent ones to Redis for every service (platform::tokens::revocations); the
    -- rows stay as the audit trail.
    CREATE TABLE identity.staff_revocations (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        operator_id UUID NOT NULL REFERENCES identity.operators (id),
        credential_public_id TEXT,
        revoked_at TIMESTAMPTZ NOT NULL,
        revoked_by TEXT NOT NULL
    );
    CREATE INDEX staff_revocations_recent ON identity.staff_revocations (revoked_at);
END
$$;
