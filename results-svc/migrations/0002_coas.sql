-- COAs and their per-analyte results, the samples they are about (learned from orders-svc's
-- sample.received and testing.started) and the payment state of their orders (learned from
-- payments-svc's payment.confirmed / invoice.updated), which gates publication.

CREATE TABLE results.samples (
    accession_number TEXT PRIMARY KEY,
    customer_id UUID NOT NULL,
    order_id UUID NOT NULL,
    order_number TEXT NOT NULL,
    line_number INTEGER NOT NULL,
    compound TEXT NOT NULL,
    lot_number TEXT,
    test_ids TEXT[] NOT NULL,
    test_names TEXT[] NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    testing_started_at TIMESTAMPTZ
);
CREATE INDEX samples_order ON results.samples (order_id);

-- One row per order known here; paid_at gates the release of its COAs.
CREATE TABLE results.lab_orders (
    order_id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    paid_at TIMESTAMPTZ
);

CREATE TABLE results.coas (
    id UUID PRIMARY KEY,
    submission_id UUID NOT NULL,
    accession_number TEXT NOT NULL REFERENCES results.samples (accession_number),
    customer_id UUID NOT NULL,
    order_id UUID NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('draft', 'submitted', 'approved', 'held', 'published', 'retracted',
        'superseded')),
    submitted_by TEXT,
    submitted_at TIMESTAMPTZ,
    approved_by TEXT,
    approved_at TIMESTAMPTZ,
    published_at TIMESTAMPTZ,
    retracted_at TIMESTAMPTZ,
    retraction_reason TEXT,
    send_back_reason TEXT,
    amends UUID REFERENCES results.coas (id),
    amendment_reason TEXT,
    superseded_by UUID REFERENCES results.coas (id),
    verification_code TEXT NOT NULL,
    signed_content TEXT NOT NULL DEFAULT '',
    signature TEXT NOT NULL DEFAULT '',
    signing_key_id TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT coas_accession_version_key UNIQUE (accession_number, version)
);
-- The customer's published COAs, newest first (GET /results and its filters).
CREATE INDEX coas_customer_published ON results.coas (customer_id, published_at DESC, id DESC)
    WHERE published_at IS NOT NULL;
CREATE INDEX coas_customer_order ON results.coas (customer_id, order_id, published_at DESC)
    WHERE published_at IS NOT NULL;
CREATE INDEX coas_held ON results.coas (order_id) WHERE status = 'held';

CREATE TABLE results.analyte_results (
    coa_id UUID NOT NULL REFERENCES results.coas (id),
    customer_id UUID NOT NULL,
    position INTEGER NOT NULL,
    analyte TEXT NOT NULL,
    test_id TEXT NOT NULL,
    value TEXT,
    qualifier TEXT,
    unit TEXT NOT NULL,
    loq TEXT,
    lod TEXT,
    specification TEXT,
    outcome TEXT,
    method TEXT NOT NULL,
    instrument TEXT NOT NULL,
    analyst TEXT NOT NULL,
    measured_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (coa_id, analyte)
);
