-- The order's shipping block as shipping-svc announced it (`shipment.label_created`, then the
-- status of each `shipment.updated` scan that moved the shipment): kept here so that
-- GET /orders/{reference} needs no call to shipping-svc.
CREATE TABLE orders.order_shipping (
    order_id UUID PRIMARY KEY REFERENCES orders.orders (id),
    customer_id UUID NOT NULL,
    shipment_id UUID NOT NULL,
    tracking_number TEXT NOT NULL,
    -- Normalized shipment status and when its scan occurred (NULL: the label's own status).
    status TEXT NOT NULL,
    status_at TIMESTAMPTZ,
    -- lab.shipping.v1.Label without its signed URL (protobuf): tracking, addresses, packing steps.
    label BYTEA NOT NULL
);

-- The read model of GET /orders/{reference}: one row per order holding the REST `order` object
-- as rendered JSON, rewritten in the same transaction as every change of the order, its children
-- or its shipping block (orders-svc `repo::view::refresh`). Read by one indexed statement with
-- the tenant filter. Existing orders are rendered by orders-svc when it starts (and by the first
-- read that finds no row), since the document is rendered in Rust.
CREATE TABLE orders.order_views (
    order_id UUID PRIMARY KEY REFERENCES orders.orders (id),
    customer_id UUID NOT NULL,
    order_number TEXT NOT NULL,
    invoice_number TEXT,
    tracking_number TEXT,
    -- The shipment whose label URL a read signs, and the byte offset in `document` where that
    -- URL goes (both NULL without a shipping block).
    shipment_id UUID,
    label_url_at INTEGER,
    -- An order labelled before this read model existed (no block kept): the offset of the
    -- `null` of its `"shipping":null`, which the gateway fills from shipping-svc.
    shipping_unknown_at INTEGER,
    document TEXT NOT NULL
);
CREATE UNIQUE INDEX order_views_order_number ON orders.order_views (customer_id, order_number);
CREATE INDEX order_views_invoice_number ON orders.order_views (customer_id, invoice_number)
    WHERE invoice_number IS NOT NULL;
CREATE INDEX order_views_tracking_number ON orders.order_views (customer_id, tracking_number)
    WHERE tracking_number IS NOT NULL;
