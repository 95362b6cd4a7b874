-- Catalog revisions (immutable, kept forever so that pinned cursors and quotes stay readable),
-- their items as rows so that listing is one SQL query, and immutable quotes.

CREATE SEQUENCE catalog.revision_seq;

CREATE TABLE catalog.revisions (
    -- "rev-000001", "rev-000002", ...: sortable and stable.
    id TEXT COLLATE "C" PRIMARY KEY,
    -- The canonical (sorted keys) catalog document.
    document JSONB NOT NULL,
    -- SHA-256 (hex) of the canonical JSON text; an identical re-import is detected with it.
    content_sha256 TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    test_count INTEGER NOT NULL,
    bundle_count INTEGER NOT NULL,
    is_current BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- At most one revision is current.
CREATE UNIQUE INDEX revisions_one_current ON catalog.revisions (is_current) WHERE is_current;

CREATE TABLE catalog.items (
    revision_id TEXT COLLATE "C" NOT NULL REFERENCES catalog.revisions (id),
    -- Byte-wise collation: the listing order and the cursor comparison agree everywhere.
    id TEXT COLLATE "C" NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('test', 'bundle')),
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    method TEXT NOT NULL,
    category_ids TEXT[] NOT NULL,
    price_cents BIGINT NOT NULL CHECK (price_cents > 0),
    test_ids TEXT[] NOT NULL,
    sample_requirement JSONB,
    PRIMARY KEY (revision_id, id)
);
CREATE INDEX items_categories ON catalog.items USING GIN (category_ids);

CREATE TABLE catalog.quotes (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    catalog_revision TEXT COLLATE "C" NOT NULL REFERENCES catalog.revisions (id),
    category_id TEXT NOT NULL,
    turnaround TEXT NOT NULL,
    turnaround_business_days INTEGER NOT NULL,
    conformity_samples BIGINT NOT NULL,
    -- Sample lines and charges exactly as priced (domain JSON, camelCase).
    lines JSONB NOT NULL,
    charges JSONB NOT NULL,
    analysis_subtotal_cents BIGINT NOT NULL,
    total_cents BIGINT NOT NULL,
    currency TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    -- Informational: set from order.created (orders-svc enforces one order per quote).
    consumed_at TIMESTAMPTZ,
    consumed_by_order_id UUID
);
CREATE INDEX quotes_customer ON catalog.quotes (customer_id, created_at);
