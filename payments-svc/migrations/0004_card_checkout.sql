-- Card rail: hosted checkout sessions (one open at a time per invoice), the card tokens of the
-- sandbox processor (saved cards), and the processor webhooks already applied.

-- Invoices may now be overdue (bank rail, past their due date and unpaid).
ALTER TABLE payments.invoices DROP CONSTRAINT invoices_status_check;
ALTER TABLE payments.invoices ADD CONSTRAINT invoices_status_check
    CHECK (status IN ('open', 'overdue', 'paid', 'void'));
CREATE INDEX invoices_unpaid_due ON payments.invoices (due_at) WHERE status = 'open';

CREATE TABLE payments.checkout_sessions (
    -- Public id (cs_ + 32 random base62 characters): the capability in the hosted URL.
    id TEXT PRIMARY KEY,
    customer_id UUID NOT NULL,
    invoice_id UUID NOT NULL REFERENCES payments.invoices (id),
    -- The locked amount: the invoice total when the session was opened.
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL,
    -- {site_url}/pay/{id}, as issued.
    hosted_url TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'completed', 'expired')),
    processor TEXT NOT NULL CHECK (processor IN ('sandbox', 'stripe')),
    -- The processor's session id and hosted page (stripe).
    processor_session_id TEXT,
    processor_url TEXT,
    -- Sandbox: the card token of a payment waiting for its authentication step.
    pending_token TEXT,
    last_error TEXT,
    attempts INT NOT NULL DEFAULT 0,
    expires_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    completed_at TIMESTAMPTZ,
    -- The payment that completed the session.
    payment_id UUID
);
CREATE INDEX checkout_sessions_invoice ON payments.checkout_sessions (customer_id, invoice_id, created_at DESC);
CREATE INDEX checkout_sessions_open_expiry ON payments.checkout_sessions (expires_at) WHERE status = 'open';
CREATE UNIQUE INDEX checkout_sessions_processor_session ON payments.checkout_sessions (processor, processor_session_id)
    WHERE processor_session_id IS NOT NULL;
-- At most one open session per invoice: a fresh link expires the previous one first.
CREATE UNIQUE INDEX checkout_sessions_one_open ON payments.checkout_sessions (invoice_id) WHERE status = 'open';

-- Sandbox card tokens (pm_sandbox_…): brand, last four digits, expiry and the test card's
-- behaviour. No card number is stored. `saved` tokens are offered on later checkouts.
CREATE TABLE payments.card_tokens (
    token TEXT PRIMARY KEY,
    customer_id UUID NOT NULL,
    brand TEXT NOT NULL,
    last4 TEXT NOT NULL,
    exp_month INT NOT NULL,
    exp_year INT NOT NULL,
    behaviour TEXT NOT NULL,
    saved BOOLEAN NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX card_tokens_saved ON payments.card_tokens (customer_id, created_at DESC) WHERE saved;

-- Processor webhook events already applied (a redelivery changes nothing).
CREATE TABLE payments.processor_events (
    processor TEXT NOT NULL,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (processor, event_id)
);

-- Card payments are recorded with the processor's payment reference; late or duplicate
-- captures (a second session paid after the invoice settled) are kept with status refund_due.

-- Spend envelopes of API keys: caps per order, per UTC day and per UTC month (NULL: no cap).
CREATE TABLE payments.spend_envelopes (
    key_id TEXT NOT NULL,
    customer_id UUID NOT NULL,
    per_order_cap_cents BIGINT CHECK (per_order_cap_cents >= 0),
    daily_cap_cents BIGINT CHECK (daily_cap_cents >= 0),
    monthly_cap_cents BIGINT CHECK (monthly_cap_cents >= 0),
    updated_by TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (key_id, customer_id)
);

-- What keys committed: one row per order (pickup, add-on). `released_at` is set when the order is
-- cancelled, its card payment expires unpaid, or it was never placed; `confirmed` once its
-- invoice exists (unconfirmed rows older than the reaping age were orders never placed).
CREATE TABLE payments.spend_commitments (
    customer_id UUID NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('order', 'pickup', 'addon')),
    subject_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    amount_cents BIGINT NOT NULL CHECK (amount_cents >= 0),
    committed_at TIMESTAMPTZ NOT NULL,
    confirmed BOOLEAN NOT NULL DEFAULT false,
    released_at TIMESTAMPTZ,
    PRIMARY KEY (customer_id, kind, subject_id)
);
CREATE INDEX spend_commitments_key_active ON payments.spend_commitments (key_id, customer_id, committed_at)
    WHERE released_at IS NULL;
CREATE INDEX spend_commitments_unconfirmed ON payments.spend_commitments (committed_at)
    WHERE NOT confirmed AND released_at IS NULL;
