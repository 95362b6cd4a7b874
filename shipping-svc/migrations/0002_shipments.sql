-- Shipments (one prepaid inbound label per order), their carrier events, the label files, the
-- label emails of the bank rail, door pickups, and the orders known to be paid.

CREATE SEQUENCE shipping.package_numbers;

CREATE TABLE shipping.shipments (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    order_id UUID NOT NULL,
    order_number TEXT NOT NULL,
    payment_method TEXT NOT NULL,
    -- 'pending' while the label is being bought, then 'bought'.
    label_state TEXT NOT NULL CHECK (label_state IN ('pending', 'bought')),
    carrier_code TEXT NOT NULL DEFAULT '',
    service_code TEXT NOT NULL DEFAULT '',
    tracking_number TEXT,
    tracking_url TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'pre_transit',
    ship_from JSONB NOT NULL,
    ship_to JSONB NOT NULL,
    packing_steps JSONB NOT NULL DEFAULT '[]',
    carrier_shipment_id TEXT NOT NULL DEFAULT '',
    last_event_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT shipments_one_per_order UNIQUE (order_id)
);
CREATE UNIQUE INDEX shipments_tracking_number ON shipping.shipments (tracking_number)
    WHERE tracking_number IS NOT NULL;
CREATE INDEX shipments_customer_listing ON shipping.shipments (customer_id, created_at DESC, id DESC);

CREATE TABLE shipping.labels (
    shipment_id UUID PRIMARY KEY REFERENCES shipping.shipments (id),
    pdf BYTEA NOT NULL,
    sha256 TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE shipping.carrier_events (
    id UUID PRIMARY KEY,
    shipment_id UUID NOT NULL REFERENCES shipping.shipments (id),
    customer_id UUID NOT NULL,
    status TEXT NOT NULL,
    status_code TEXT NOT NULL,
    description TEXT NOT NULL,
    occurred_at TIMESTAMPTZ NOT NULL,
    location TEXT NOT NULL,
    carrier_event_id TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT carrier_events_once UNIQUE (shipment_id, carrier_event_id)
);
CREATE INDEX carrier_events_of_shipment ON shipping.carrier_events (shipment_id, occurred_at, id);

CREATE TABLE shipping.label_emails (
    id UUID PRIMARY KEY,
    shipment_id UUID NOT NULL REFERENCES shipping.shipments (id),
    customer_id UUID NOT NULL,
    message_id TEXT NOT NULL,
    to_address TEXT NOT NULL,
    subject TEXT NOT NULL,
    -- 'sending' (claimed), 'sent' or 'failed' (retried by the consumer's redelivery).
    status TEXT NOT NULL CHECK (status IN ('sending', 'sent', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    sent_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT label_emails_once UNIQUE (shipment_id)
);

CREATE TABLE shipping.paid_orders (
    order_id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    rail TEXT NOT NULL,
    paid_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE shipping.pickups (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    shipment_id UUID NOT NULL REFERENCES shipping.shipments (id),
    order_id UUID NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('awaiting_payment', 'booked')),
    pickup_date DATE NOT NULL,
    pickup_window TEXT NOT NULL,
    price_cents BIGINT NOT NULL CHECK (price_cents >= 0),
    pay_url TEXT NOT NULL,
    payment_reference TEXT,
    confirmation_number TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    booked_at TIMESTAMPTZ,
    CONSTRAINT pickups_one_per_shipment UNIQUE (shipment_id)
);

-- The orders announced by order.created: what a label needs when it is bought later
-- (stablecoin orders get theirs when the payment settles).
CREATE TABLE shipping.orders (
    order_id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    order_number TEXT NOT NULL,
    payment_method TEXT NOT NULL,
    quote_id UUID NOT NULL,
    shipping_address_id TEXT,
    created_at TIMESTAMPTZ NOT NULL
);
