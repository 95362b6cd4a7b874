-- The stablecoin rail: payment requests (one per invoice), the Transfer logs seen on chain
-- (by submission or by the finalized-log scanner), and the scanner's checkpoint.

CREATE TABLE payments.stablecoin_requests (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    invoice_id UUID NOT NULL REFERENCES payments.invoices (id),
    order_id UUID NOT NULL,
    order_number TEXT NOT NULL,
    chain_id BIGINT NOT NULL,
    -- Addresses in lowercase 0x hex.
    token_address TEXT NOT NULL,
    target_address TEXT NOT NULL,
    payer_address TEXT NOT NULL,
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    reference_atomic BIGINT NOT NULL CHECK (reference_atomic BETWEEN 1 AND 9999),
    amount_atomic BIGINT NOT NULL CHECK (amount_atomic = amount_cents * 10000 + reference_atomic),
    status TEXT NOT NULL CHECK (status IN ('awaiting_transfer', 'confirming', 'confirmed', 'expired')),
    expires_at TIMESTAMPTZ NOT NULL,
    -- Set when the reference is free again (confirmed, or expired longer than the late window);
    -- until then no other open request to the same target may take it.
    reference_released_at TIMESTAMPTZ,
    -- The transfer that pays (or is confirming) this request.
    transfer_id BIGINT,
    -- Settlement proof, written at confirmation.
    proof JSONB,
    confirmed_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT stablecoin_requests_invoice_key UNIQUE (invoice_id)
);
-- The sub-cent reference is unique among requests holding it for one token and target: two open
-- requests of the same total never share an exact amount, whatever the concurrency.
CREATE UNIQUE INDEX stablecoin_requests_held_reference
    ON payments.stablecoin_requests (chain_id, token_address, target_address, reference_atomic)
    WHERE reference_released_at IS NULL;
CREATE INDEX stablecoin_requests_match
    ON payments.stablecoin_requests (chain_id, token_address, target_address, amount_atomic)
    WHERE reference_released_at IS NULL;
CREATE INDEX stablecoin_requests_open ON payments.stablecoin_requests (status, expires_at)
    WHERE status IN ('awaiting_transfer', 'confirming', 'expired');

CREATE TABLE payments.chain_transfers (
    id BIGSERIAL PRIMARY KEY,
    chain_id BIGINT NOT NULL,
    tx_hash TEXT NOT NULL,
    log_index BIGINT NOT NULL,
    block_number BIGINT NOT NULL,
    block_hash TEXT NOT NULL,
    block_timestamp TIMESTAMPTZ,
    token_address TEXT NOT NULL,
    from_address TEXT NOT NULL,
    to_address TEXT NOT NULL,
    -- uint256 as a decimal string (never a float).
    value_atomic TEXT NOT NULL,
    request_id UUID REFERENCES payments.stablecoin_requests (id),
    -- applied: pays request_id; late: matched an expired request (staff); unmatched: no request
    -- with that exact amount (under/overpayments, strangers; staff); wrong_sender: the exact
    -- amount from another sender (staff); duplicate: a second payment of a paid request (staff);
    -- reorged: left the canonical chain.
    disposition TEXT NOT NULL CHECK (disposition IN ('applied', 'late', 'unmatched', 'wrong_sender', 'duplicate', 'reorged')),
    -- How it was seen: by a submission, and by the finalized-log scanner (with the block hash the
    -- scanner read, which must equal block_hash for confirmation).
    submitted BOOLEAN NOT NULL DEFAULT false,
    scanner_block_hash TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- One log is recorded once, so it can never pay two requests.
    CONSTRAINT chain_transfers_log_key UNIQUE (chain_id, tx_hash, log_index)
);
CREATE UNIQUE INDEX chain_transfers_one_applied_per_request
    ON payments.chain_transfers (request_id) WHERE disposition = 'applied';
CREATE INDEX chain_transfers_for_staff ON payments.chain_transfers (created_at DESC)
    WHERE disposition IN ('late', 'unmatched', 'wrong_sender', 'duplicate');

ALTER TABLE payments.stablecoin_requests
    ADD CONSTRAINT stablecoin_requests_transfer_fkey FOREIGN KEY (transfer_id) REFERENCES payments.chain_transfers (id);

CREATE TABLE payments.chain_checkpoints (
    chain_id BIGINT PRIMARY KEY,
    -- The last block the scanner has read (always at or below finalized).
    block_number BIGINT NOT NULL,
    block_hash TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
