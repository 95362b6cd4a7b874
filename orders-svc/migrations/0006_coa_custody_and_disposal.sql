-- Which published COAs are still in force (a retraction or a published amendment ends one), so
-- that a retraction can move a completed order back to reporting; and the disposal of a sample's
-- retained portion at the end of its retention period (a custody entry `disposed`).
-- (Numbered 0006 to leave 0005 to a parallel branch of orders-svc.)

ALTER TABLE orders.published_coas
    ADD COLUMN retracted_at TIMESTAMPTZ,
    ADD COLUMN superseded_by UUID;

ALTER TABLE orders.samples
    ADD COLUMN disposed_at TIMESTAMPTZ,
    ADD COLUMN disposed_by TEXT;
