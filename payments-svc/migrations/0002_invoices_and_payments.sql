-- Invoices (one per customer order), their itemized lines, and the payments recorded against them.

-- Numbers the invoices: INV-<year>-<6-digit value>. Gaps are harmless (a lost race for an order
-- consumes a value).
CREATE SEQUENCE payments.invoice_number_seq;

CREATE TABLE payments.invoices (
    id UUID PRIMARY KEY,
    invoice_number TEXT NOT NULL,
    customer_id UUID NOT NULL,
    order_id UUID NOT NULL,
    order_number TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'paid', 'void')),
    -- Status before the last change; empty when never changed.
    previous_status TEXT NOT NULL DEFAULT '',
    payment_method TEXT NOT NULL CHECK (payment_method IN ('bank_invoice', 'card_checkout', 'chain_stablecoin')),
    currency TEXT NOT NULL,
    total_cents BIGINT NOT NULL CHECK (total_cents > 0),
    amount_paid_cents BIGINT NOT NULL DEFAULT 0 CHECK (amount_paid_cents >= 0),
    amount_due_cents BIGINT NOT NULL CHECK (amount_due_cents >= 0),
    -- Remittance instructions frozen at issue (bank rail only), so later setting changes do not
    -- rewrite an issued invoice.
    bank_instructions JSONB,
    issued_at TIMESTAMPTZ NOT NULL,
    due_at TIMESTAMPTZ NOT NULL,
    paid_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT invoices_invoice_number_key UNIQUE (invoice_number),
    -- One invoice per order: CreateInvoice and the order.created backstop converge on this.
    CONSTRAINT invoices_customer_order_key UNIQUE (customer_id, order_id)
);
CREATE INDEX invoices_customer_listing ON payments.invoices (customer_id, created_at DESC, id DESC);

CREATE TABLE payments.invoice_lines (
    invoice_id UUID NOT NULL REFERENCES payments.invoices (id),
    line_number INT NOT NULL,
    description TEXT NOT NULL,
    quantity BIGINT NOT NULL CHECK (quantity > 0),
    unit_price_cents BIGINT NOT NULL,
    amount_cents BIGINT NOT NULL,
    PRIMARY KEY (invoice_id, line_number)
);

CREATE TABLE payments.payments (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    invoice_id UUID NOT NULL REFERENCES payments.invoices (id),
    rail TEXT NOT NULL CHECK (rail IN ('bank_invoice', 'card_checkout', 'chain_stablecoin')),
    status TEXT NOT NULL,
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL,
    -- Bank reference of the transfer, or transaction hash.
    external_reference TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    -- A bank reference is recorded once: RecordBankPayment is idempotent on it.
    CONSTRAINT payments_rail_external_reference_key UNIQUE (rail, external_reference)
);
CREATE INDEX payments_customer_listing ON payments.payments (customer_id, created_at DESC, id DESC);
CREATE INDEX payments_invoice ON payments.payments (invoice_id);
