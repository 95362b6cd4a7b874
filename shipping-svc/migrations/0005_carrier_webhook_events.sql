-- The external carrier's webhook events already applied, by the carrier's event id (EasyPost
-- `evt_…`). The id is inserted in the transaction that records the event's scans, so a replay
-- or a redelivery (even concurrent with the first delivery) waits for that transaction and then
-- finds the id: it is answered with success and changes nothing. Ids are pruned after a
-- retention far longer than the signed timestamp's tolerance (a replay outside the tolerance is
-- refused before it gets here).
CREATE TABLE shipping.carrier_webhook_events (
    carrier TEXT NOT NULL,
    event_id TEXT NOT NULL,
    description TEXT NOT NULL,
    -- The delivery's signed timestamp (`X-Timestamp`).
    signed_at TIMESTAMPTZ NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (carrier, event_id)
);
CREATE INDEX carrier_webhook_events_received ON shipping.carrier_webhook_events (received_at);
