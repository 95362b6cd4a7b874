-- Sandbox customers (docs/sandbox.md): a customer staff flag as sandbox drives its own orders
-- through the lifecycle with POST /orders/{reference}/simulate. Every existing customer is live.
-- The flag travels with every key record the gateway authenticates (VerifyApiKey), so the
-- services see it in the principal token; who set it last and when is kept for the audit.
ALTER TABLE identity.customers
    ADD COLUMN sandbox BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN sandbox_changed_at TIMESTAMPTZ,
    ADD COLUMN sandbox_changed_by TEXT;
