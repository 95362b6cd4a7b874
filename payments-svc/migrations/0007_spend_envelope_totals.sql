-- Running totals of each spend envelope: what its key committed (and did not release) in the
-- envelope's current UTC day and month, kept in the same transaction as every commitment,
-- release and re-activation of the key, so that a commitment checks the caps against one row
-- instead of summing the key's commitments. `day_start` / `month_start` name the period the
-- totals belong to; the first write in a later period starts that period's total from zero.
ALTER TABLE payments.spend_envelopes
    ADD COLUMN day_start DATE NOT NULL DEFAULT DATE '1970-01-01',
    ADD COLUMN day_committed_cents BIGINT NOT NULL DEFAULT 0 CHECK (day_committed_cents >= 0),
    ADD COLUMN month_start DATE NOT NULL DEFAULT DATE '1970-01-01',
    ADD COLUMN month_committed_cents BIGINT NOT NULL DEFAULT 0 CHECK (month_committed_cents >= 0);

-- Envelopes set before this migration start from their active commitments of the current UTC
-- day and month.
UPDATE payments.spend_envelopes AS envelope SET
    day_start = (now() AT TIME ZONE 'UTC')::date,
    month_start = date_trunc('month', now() AT TIME ZONE 'UTC')::date,
    day_committed_cents = totals.today,
    month_committed_cents = totals.month
FROM (
    SELECT e.key_id, e.customer_id,
           COALESCE(SUM(c.amount_cents) FILTER (
               WHERE c.committed_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'), 0)::bigint AS today,
           COALESCE(SUM(c.amount_cents), 0)::bigint AS month
    FROM payments.spend_envelopes e
    LEFT JOIN payments.spend_commitments c
      ON c.key_id = e.key_id AND c.customer_id = e.customer_id AND c.released_at IS NULL
     AND c.committed_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    GROUP BY e.key_id, e.customer_id
) AS totals
WHERE envelope.key_id = totals.key_id AND envelope.customer_id = totals.customer_id;
