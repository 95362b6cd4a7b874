-- Orders placed from quotes: the order row (with the payment block of its invoice), its sample
-- lines, its non-line charges and its status history. Child rows repeat customer_id so that
-- every read filters by the tenant, even when it starts from an order id.

-- Public order numbers are ORD-<year>-<6-digit sequence>.
CREATE SEQUENCE orders.order_number_seq;

CREATE TABLE orders.orders (
    id UUID PRIMARY KEY,
    order_number TEXT NOT NULL CONSTRAINT orders_order_number_key UNIQUE,
    customer_id UUID NOT NULL,
    -- One quote yields at most one order (quote_already_consumed).
    quote_id UUID NOT NULL CONSTRAINT orders_quote_id_key UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('invoice_sent', 'overdue', 'paid', 'label_generated', 'in_transit',
        'sample_received', 'in_lab', 'reporting', 'completed', 'cancelled')),
    payment_method TEXT NOT NULL CHECK (payment_method IN ('bank_invoice', 'card_checkout', 'chain_stablecoin')),
    catalog_revision TEXT NOT NULL,
    category_id TEXT NOT NULL,
    turnaround TEXT NOT NULL,
    turnaround_business_days INTEGER NOT NULL,
    conformity_samples BIGINT NOT NULL,
    client_reference TEXT,
    notes TEXT,
    publish_raw_data BOOLEAN NOT NULL,
    expected_payer_address TEXT,
    billing_address_id UUID,
    shipping_address_id UUID,
    total_cents BIGINT NOT NULL CHECK (total_cents >= 0),
    currency TEXT NOT NULL,
    -- Payment block: the invoice as last known to orders-svc (NULL until issued).
    invoice_id TEXT,
    invoice_number TEXT,
    invoice_status TEXT,
    amount_due_cents BIGINT,
    invoice_due_at TIMESTAMPTZ,
    bank_instructions JSONB,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX orders_customer_newest ON orders.orders (customer_id, created_at DESC, id DESC);
CREATE INDEX orders_customer_invoice_number ON orders.orders (customer_id, invoice_number);

CREATE TABLE orders.order_lines (
    order_id UUID NOT NULL REFERENCES orders.orders (id),
    customer_id UUID NOT NULL,
    line_number INTEGER NOT NULL,
    compound_name TEXT NOT NULL,
    lot_number TEXT,
    matrix_notes TEXT,
    -- Priced items copied from the quote: [{itemId, kind, name, priceCents, testIds}].
    items JSONB NOT NULL,
    -- Containers and amounts to ship, copied from the quote (for packing steps).
    sample_requirements JSONB NOT NULL,
    subtotal_cents BIGINT NOT NULL,
    PRIMARY KEY (order_id, line_number)
);
CREATE INDEX order_lines_customer ON orders.order_lines (customer_id, order_id);

CREATE TABLE orders.order_charges (
    order_id UUID NOT NULL REFERENCES orders.orders (id),
    customer_id UUID NOT NULL,
    position INTEGER NOT NULL,
    kind TEXT NOT NULL,
    description TEXT NOT NULL,
    quantity BIGINT NOT NULL,
    unit_price_cents BIGINT NOT NULL,
    amount_cents BIGINT NOT NULL,
    PRIMARY KEY (order_id, position)
);
CREATE INDEX order_charges_customer ON orders.order_charges (customer_id, order_id);

CREATE TABLE orders.order_status_history (
    id BIGSERIAL PRIMARY KEY,
    order_id UUID NOT NULL REFERENCES orders.orders (id),
    customer_id UUID NOT NULL,
    -- Empty for the first entry.
    from_status TEXT NOT NULL,
    to_status TEXT NOT NULL,
    changed_at TIMESTAMPTZ NOT NULL,
    reason TEXT NOT NULL
);
CREATE INDEX order_status_history_order ON orders.order_status_history (customer_id, order_id, id);
