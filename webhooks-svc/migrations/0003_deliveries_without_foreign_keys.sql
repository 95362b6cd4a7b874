-- Deliveries and attempts are written at thousands of rows per second; their foreign-key
-- triggers cost more than the rest of the fan-out. Integrity holds by construction (deliveries
-- are created only by statements that join their endpoint and event; attempts only for claimed
-- deliveries) and pruning deletes attempts, deliveries and events explicitly, in that order.
ALTER TABLE webhooks.deliveries DROP CONSTRAINT deliveries_endpoint_id_fkey;
ALTER TABLE webhooks.deliveries DROP CONSTRAINT deliveries_event_id_fkey;
ALTER TABLE webhooks.delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_id_fkey;
CREATE INDEX deliveries_by_event ON webhooks.deliveries (event_id);
