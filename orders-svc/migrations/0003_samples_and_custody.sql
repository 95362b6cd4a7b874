-- Samples as the lab logs them (one per order line, with the accession number the lab assigns)
-- and the hash-chained chain-of-custody entries of each order.

-- Accession numbers are ACC-<year>-<6-digit sequence>.
CREATE SEQUENCE orders.accession_number_seq;

CREATE TABLE orders.samples (
    accession_number TEXT PRIMARY KEY,
    order_id UUID NOT NULL REFERENCES orders.orders (id),
    customer_id UUID NOT NULL,
    line_number INTEGER NOT NULL,
    units INTEGER NOT NULL CHECK (units > 0),
    containers TEXT NOT NULL,
    condition TEXT NOT NULL,
    storage_location TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    received_by TEXT NOT NULL,
    tracking_number TEXT NOT NULL,
    testing_started_at TIMESTAMPTZ,
    retain_until TIMESTAMPTZ NOT NULL,
    CONSTRAINT samples_order_line_key UNIQUE (order_id, line_number)
);
CREATE INDEX samples_customer_order ON orders.samples (customer_id, order_id, line_number);

CREATE TABLE orders.custody_entries (
    order_id UUID NOT NULL REFERENCES orders.orders (id),
    customer_id UUID NOT NULL,
    sequence BIGINT NOT NULL,
    occurred_at TIMESTAMPTZ NOT NULL,
    action TEXT NOT NULL,
    accession_number TEXT NOT NULL,
    actor TEXT NOT NULL,
    location TEXT NOT NULL,
    details TEXT NOT NULL,
    previous_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (order_id, sequence)
);
CREATE INDEX custody_entries_customer ON orders.custody_entries (customer_id, order_id, sequence);

-- Samples whose COA was published (from results-svc's coa.published), for reporting/completed.
CREATE TABLE orders.published_coas (
    accession_number TEXT NOT NULL REFERENCES orders.samples (accession_number),
    coa_id UUID NOT NULL,
    customer_id UUID NOT NULL,
    published_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (accession_number, coa_id)
);
