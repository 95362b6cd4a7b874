-- A cancelled order's label (order.cancelled; docs/shipping.md, "Cancelled orders"). An order
-- cancelled before the carrier accepted its parcel has its label voided with the carrier:
-- `label_void = 'voided'` with the carrier's answer to the refund (`refund_status`: submitted,
-- refunded, or rejected when the carrier refused; the label is withdrawn all the same) and
-- `voided_at`. A parcel already with the carrier is left as it is: `label_void = 'used'`.
-- Either is written once, in the transaction that locks the row, so a redelivered or concurrent
-- order.cancelled finds it and changes nothing.
ALTER TABLE shipping.shipments
    ADD COLUMN label_void TEXT CHECK (label_void IN ('voided', 'used')),
    ADD COLUMN refund_status TEXT CHECK (refund_status IN ('submitted', 'refunded', 'rejected')),
    ADD COLUMN voided_at TIMESTAMPTZ,
    ADD COLUMN order_cancelled_at TIMESTAMPTZ,
    ADD CONSTRAINT shipments_void_complete CHECK (
        (label_void = 'voided') = (refund_status IS NOT NULL AND voided_at IS NOT NULL)
    );

-- The orders cancelled (order.cancelled), whether or not their label was bought yet: a label is
-- never bought for an order listed here (a delayed order.created or payment.confirmed finds it).
CREATE TABLE shipping.cancelled_orders (
    order_id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    -- The order status the cancellation left (before receipt: nothing was used yet).
    from_status TEXT NOT NULL,
    cancelled_at TIMESTAMPTZ NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL
);

-- A door pickup of a voided label is cancelled (with the carrier when it was booked there).
ALTER TABLE shipping.pickups DROP CONSTRAINT pickups_status_check;
ALTER TABLE shipping.pickups ADD CONSTRAINT pickups_status_check
    CHECK (status IN ('awaiting_payment', 'booked', 'payment_expired', 'cancelled'));
ALTER TABLE shipping.pickups ADD COLUMN cancelled_at TIMESTAMPTZ;
