-- Operator controls (docs/security.md, "Lab operators").
--
-- A new operator holding lab.qa or identity.admin waits for a second admin's approval
-- ('pending'), without any credential: the approval creates it. created_by_id and
-- approved_by_id are operator ids (NULL: registered by `gateway bootstrap-operator`, by the
-- development run, or before operators had ids in tokens), so four eyes on an approval compares
-- operators, not names.
ALTER TABLE gateway.operators
    ADD COLUMN status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('pending', 'active')),
    ADD COLUMN created_by_id UUID,
    ADD COLUMN approved_by TEXT,
    ADD COLUMN approved_by_id UUID,
    ADD COLUMN approved_at TIMESTAMPTZ,
    ALTER COLUMN public_id DROP NOT NULL,
    ALTER COLUMN verifier DROP NOT NULL,
    ADD CONSTRAINT operators_credential_once_active CHECK (
        (status = 'pending') = (public_id IS NULL) AND (public_id IS NULL) = (verifier IS NULL));

-- Revocations of staff tokens already issued: every token of a disabled operator
-- (credential_public_id NULL), or every token issued for a rotated credential. The gateway
-- writes the recent ones to Redis for every service (platform::tokens::revocations); the rows
-- stay as the audit trail.
CREATE TABLE gateway.staff_revocations (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operator_id UUID NOT NULL REFERENCES gateway.operators (id),
    credential_public_id TEXT,
    revoked_at TIMESTAMPTZ NOT NULL,
    revoked_by TEXT NOT NULL
);
CREATE INDEX staff_revocations_recent ON gateway.staff_revocations (revoked_at);
