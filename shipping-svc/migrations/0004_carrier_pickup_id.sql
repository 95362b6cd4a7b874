-- A door pickup is booked with the carrier in two steps, like a label: the carrier's pickup is
-- created (nothing is booked or billed) and its id committed here before it is bought, so a
-- retry after a crash between the carrier's purchase and our commit finds that pickup and reads
-- its confirmation back instead of booking (and billing) a second one.
ALTER TABLE shipping.pickups ADD COLUMN carrier_pickup_id TEXT;
