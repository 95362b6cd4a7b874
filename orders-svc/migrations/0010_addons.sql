-- Add-ons: more tests on the retained sample of one order line (docs/order-states.md,
-- "Add-ons"), priced from the order's catalog revision and billed by a supplementary invoice on
-- the order's rail (payments-svc, one invoice per add-on). The invoice block is the invoice as
-- last known here, like the order's payment block.
CREATE TABLE orders.addons (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    order_id UUID NOT NULL REFERENCES orders.orders (id),
    line_number INTEGER NOT NULL,
    accession_number TEXT NOT NULL REFERENCES orders.samples (accession_number),
    status TEXT NOT NULL CHECK (status IN ('pending_payment', 'paid', 'in_testing', 'reported')),
    -- [{testId, name, priceCents}] in the requested order.
    tests JSONB NOT NULL,
    total_cents BIGINT NOT NULL CHECK (total_cents >= 0),
    currency TEXT NOT NULL,
    catalog_revision TEXT NOT NULL,
    requested_at TIMESTAMPTZ NOT NULL,
    paid_at TIMESTAMPTZ,
    reported_at TIMESTAMPTZ,
    -- The supplementary invoice (a PaymentSummary as JSON); NULL until payments-svc answered.
    invoice JSONB
);
CREATE INDEX addons_order ON orders.addons (customer_id, order_id, requested_at, id);
CREATE INDEX addons_accession ON orders.addons (accession_number) WHERE status IN ('paid', 'in_testing');
