-- Raw instrument files imported by staff per result set of a sample, and the structured
-- measurements parsed from them (issue 27). The bytes live in the blob store under
-- `storage_key` (and `native_bundle_key`); only provenance and measurements live here.
-- An import is visible once its row commits: the blob is written first, then the import row
-- and every measurement in one transaction, so nothing half-imported is ever read.
-- Which COAs release a file is derived, not stored: every COA of the file's accession that was
-- published (status published or superseded) at or after the file's import; a retracted COA
-- releases nothing.

CREATE TABLE results.result_sets (
    id UUID PRIMARY KEY,
    accession_number TEXT NOT NULL REFERENCES results.samples (accession_number),
    customer_id UUID NOT NULL,
    order_id UUID NOT NULL,
    name TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT result_sets_accession_name_key UNIQUE (accession_number, name)
);

CREATE TABLE results.instrument_imports (
    id UUID PRIMARY KEY,
    result_set_id UUID NOT NULL REFERENCES results.result_sets (id),
    accession_number TEXT NOT NULL REFERENCES results.samples (accession_number),
    customer_id UUID NOT NULL,
    order_id UUID NOT NULL,
    vendor TEXT NOT NULL,
    filename TEXT NOT NULL,
    mime_type TEXT,
    size_bytes BIGINT NOT NULL CHECK (size_bytes >= 0),
    sha256 TEXT NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    client_sha256 TEXT CHECK (client_sha256 ~ '^[0-9a-f]{64}$'),
    -- Set only when the client's hash equals the server's.
    integrity_verified_at TIMESTAMPTZ,
    format TEXT,
    parser_version TEXT NOT NULL,
    connector_version TEXT,
    sample_identifier TEXT,
    run_identifier TEXT,
    instrument_id TEXT,
    instrument_name TEXT,
    method_id TEXT,
    acquired_at TIMESTAMPTZ,
    imported_at TIMESTAMPTZ NOT NULL,
    imported_by TEXT NOT NULL,
    imported_by_id UUID,
    storage_key TEXT NOT NULL,
    native_bundle_filename TEXT,
    native_bundle_key TEXT,
    native_bundle_size_bytes BIGINT,
    parse_status TEXT NOT NULL CHECK (parse_status IN ('parsed', 'failed', 'not_parsed')),
    parse_error TEXT,
    -- The same bytes under the same name into the same result set is one import (a retry).
    CONSTRAINT instrument_imports_same_file_key UNIQUE (result_set_id, filename, sha256)
);
CREATE INDEX instrument_imports_order ON results.instrument_imports (customer_id, order_id, imported_at);
CREATE INDEX instrument_imports_storage_key ON results.instrument_imports (storage_key);
CREATE INDEX instrument_imports_native_bundle_key ON results.instrument_imports (native_bundle_key)
    WHERE native_bundle_key IS NOT NULL;
CREATE INDEX instrument_imports_accession ON results.instrument_imports (accession_number, imported_at);

CREATE TABLE results.instrument_measurements (
    import_id UUID NOT NULL REFERENCES results.instrument_imports (id),
    position INTEGER NOT NULL,
    customer_id UUID NOT NULL,
    analyte TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('chromatographic_peak', 'srm_transition')),
    retention_time_min DOUBLE PRECISION,
    mz DOUBLE PRECISION,
    precursor_mz DOUBLE PRECISION,
    product_mz DOUBLE PRECISION,
    response DOUBLE PRECISION,
    response_unit TEXT,
    concentration TEXT,
    concentration_unit TEXT,
    loq TEXT,
    PRIMARY KEY (import_id, position)
);

-- Publication order (exports): publications and imports take one transaction-scoped advisory
-- lock and stamp themselves inside it (`repo::publication_stamp`), strictly after every stamp
-- already committed, so stamps follow commit order: an export page never misses a row committed
-- late with an earlier time. The newest stamp is read through this index.
CREATE INDEX coas_published_at ON results.coas (published_at) WHERE published_at IS NOT NULL;
