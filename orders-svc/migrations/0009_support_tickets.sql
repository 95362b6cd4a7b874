-- Support tickets (docs/support.md): a customer's question about one of its orders (or about
-- nothing in particular) and the thread of messages between the customer and lab staff. Bodies
-- are plain text stored exactly as written. Messages repeat customer_id so that every read
-- filters by the tenant, even when it starts from a ticket id.
-- (0009: 0008 is taken by order cancellation.)

-- Public ticket numbers are TKT-<year>-<6-digit sequence>.
CREATE SEQUENCE orders.ticket_number_seq;

CREATE TABLE orders.support_tickets (
    id UUID PRIMARY KEY,
    ticket_number TEXT NOT NULL CONSTRAINT support_tickets_ticket_number_key UNIQUE,
    customer_id UUID NOT NULL,
    subject TEXT NOT NULL CHECK (char_length(subject) BETWEEN 1 AND 200),
    status TEXT NOT NULL CHECK (status IN ('open', 'answered', 'closed')),
    -- The reference as the customer gave it, and the customer's order it resolved to.
    reference TEXT,
    order_id UUID REFERENCES orders.orders (id),
    order_number TEXT,
    message_count INTEGER NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    closed_at TIMESTAMPTZ
);
-- The customer's listing, newest first (optionally of one status).
CREATE INDEX support_tickets_customer ON orders.support_tickets (customer_id, created_at DESC, id DESC);
-- The staff listing, newest first.
CREATE INDEX support_tickets_created ON orders.support_tickets (created_at DESC, id DESC);

CREATE TABLE orders.support_ticket_messages (
    id UUID PRIMARY KEY,
    ticket_id UUID NOT NULL REFERENCES orders.support_tickets (id),
    customer_id UUID NOT NULL,
    author_kind TEXT NOT NULL CHECK (author_kind IN ('customer', 'staff')),
    -- The operator's name for a staff message; NULL for the customer's.
    author_name TEXT,
    body TEXT NOT NULL CHECK (char_length(body) BETWEEN 1 AND 10000),
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX support_ticket_messages_ticket ON orders.support_ticket_messages (customer_id, ticket_id, created_at, id);
