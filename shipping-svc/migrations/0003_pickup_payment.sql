-- Door pickups are paid on the hosted checkout page (payments-svc): the pickup remembers its
-- checkout session and when its payment link expires; a payment that expired unpaid ends the
-- pickup (`payment_expired`) and the shipment may request a new one, so "one pickup per
-- shipment" now counts only pickups that are awaiting payment or booked.
ALTER TABLE shipping.pickups DROP CONSTRAINT pickups_status_check;
ALTER TABLE shipping.pickups ADD CONSTRAINT pickups_status_check
    CHECK (status IN ('awaiting_payment', 'booked', 'payment_expired'));
ALTER TABLE shipping.pickups DROP CONSTRAINT pickups_one_per_shipment;
CREATE UNIQUE INDEX pickups_one_active_per_shipment ON shipping.pickups (shipment_id)
    WHERE status <> 'payment_expired';
CREATE INDEX pickups_shipment ON shipping.pickups (shipment_id, created_at DESC);
ALTER TABLE shipping.pickups
    ADD COLUMN checkout_session_id TEXT,
    ADD COLUMN pay_expires_at TIMESTAMPTZ;
