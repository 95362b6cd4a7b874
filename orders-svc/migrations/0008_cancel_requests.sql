-- Cancellation requests: a customer asks to cancel an order, a human approves or declines it
-- (docs/order-states.md, "Cancellation"). At most one pending request per order; a decided
-- request keeps who decided, when, the note shown to the customer and, for an approval after
-- the sample was received, the charge the customer still owes.
-- (Numbered 0008 to leave 0009 to a parallel branch of orders-svc.)

CREATE TABLE orders.cancel_requests (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    order_id UUID NOT NULL REFERENCES orders.orders (id),
    reason TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'declined')),
    -- The order's status when the request was filed.
    order_status TEXT NOT NULL,
    requested_at TIMESTAMPTZ NOT NULL,
    decided_at TIMESTAMPTZ,
    decided_by TEXT,
    note TEXT,
    charge_cents BIGINT CHECK (charge_cents >= 0),
    CHECK ((status = 'pending') = (decided_at IS NULL))
);
CREATE UNIQUE INDEX cancel_requests_one_pending ON orders.cancel_requests (order_id) WHERE status = 'pending';
CREATE INDEX cancel_requests_order ON orders.cancel_requests (customer_id, order_id, requested_at DESC);
CREATE INDEX cancel_requests_by_status ON orders.cancel_requests (status, requested_at);
