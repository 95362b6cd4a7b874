-- Cancelled orders (docs/payments.md, "Cancelled orders"): `order.cancelled` credits the order's
-- invoice down to the charge staff kept, once per order (payments.order_cancellations), and
-- gives back what was paid above it (payments.refunds: one refund per payment at most).
-- Card refunds go through the processor (pending → succeeded or failed); bank and stablecoin
-- refunds are `due` until staff carry them out and record them.

ALTER TABLE payments.invoices ADD COLUMN credited_cents BIGINT NOT NULL DEFAULT 0 CHECK (credited_cents >= 0);

CREATE TABLE payments.order_cancellations (
    order_id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    cancel_request_id TEXT NOT NULL,
    charge_cents BIGINT NOT NULL CHECK (charge_cents >= 0),
    -- The order.cancelled event applied.
    event_id TEXT NOT NULL,
    invoice_id UUID REFERENCES payments.invoices (id),
    applied_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE payments.refunds (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    invoice_id UUID NOT NULL REFERENCES payments.invoices (id),
    payment_id UUID NOT NULL REFERENCES payments.payments (id),
    order_id UUID NOT NULL,
    rail TEXT NOT NULL CHECK (rail IN ('bank_invoice', 'card_checkout', 'chain_stablecoin')),
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'due')),
    -- The processor's refund id (card), once it answered.
    processor_refund_id TEXT,
    -- Staff's proof of a bank or stablecoin refund (bank reference or transaction hash).
    external_reference TEXT,
    recorded_by TEXT,
    failure TEXT,
    attempts INT NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    completed_at TIMESTAMPTZ,
    CONSTRAINT refunds_payment_key UNIQUE (payment_id)
);
CREATE INDEX refunds_customer ON payments.refunds (customer_id, created_at DESC);
CREATE INDEX refunds_open ON payments.refunds (status, created_at) WHERE status IN ('pending', 'due');
