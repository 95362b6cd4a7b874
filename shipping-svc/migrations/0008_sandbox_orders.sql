-- A sandbox customer's orders (docs/sandbox.md) get their labels, voids and pickups from the
-- built-in sandbox carrier, whatever carrier the deployment runs for live orders. The flag is
-- copied from `order.created` (or orders-svc's PrepareLabel) and never changes.
ALTER TABLE shipping.orders ADD COLUMN sandbox BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE shipping.shipments ADD COLUMN sandbox BOOLEAN NOT NULL DEFAULT false;
