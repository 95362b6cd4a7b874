-- Door-pickup payments on the hosted checkout page: a checkout session is bound either to an
-- order's invoice (purpose 'invoice', as before) or to a door pickup of shipping-svc (purpose
-- 'pickup': no invoice; the pickup's id, order and the line the page shows). One session per
-- pickup, ever: it is single use, and an expired one makes the customer request a new pickup.
ALTER TABLE payments.checkout_sessions ALTER COLUMN invoice_id DROP NOT NULL;
ALTER TABLE payments.checkout_sessions
    ADD COLUMN purpose TEXT NOT NULL DEFAULT 'invoice' CHECK (purpose IN ('invoice', 'pickup')),
    ADD COLUMN pickup_id UUID,
    ADD COLUMN order_id UUID,
    ADD COLUMN order_number TEXT,
    ADD COLUMN description TEXT;
ALTER TABLE payments.checkout_sessions ADD CONSTRAINT checkout_sessions_subject CHECK (
    (purpose = 'invoice' AND invoice_id IS NOT NULL AND pickup_id IS NULL)
    OR (purpose = 'pickup' AND invoice_id IS NULL AND pickup_id IS NOT NULL AND order_id IS NOT NULL
        AND order_number IS NOT NULL AND description IS NOT NULL));
CREATE UNIQUE INDEX checkout_sessions_one_per_pickup ON payments.checkout_sessions (pickup_id)
    WHERE pickup_id IS NOT NULL;

-- The money a pickup session captured (pickups have no invoice, so they are not rows of
-- payments.payments). `refund_due`: captured after the session had expired (a PSP's late
-- success), so no pickup is booked and staff refund it. A processor reference is recorded once.
CREATE TABLE payments.pickup_payments (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    pickup_id UUID NOT NULL,
    session_id TEXT NOT NULL REFERENCES payments.checkout_sessions (id),
    order_id UUID NOT NULL,
    rail TEXT NOT NULL CHECK (rail IN ('card_checkout')),
    status TEXT NOT NULL CHECK (status IN ('succeeded', 'refund_due')),
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    currency TEXT NOT NULL,
    external_reference TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT pickup_payments_reference UNIQUE (rail, external_reference)
);
CREATE INDEX pickup_payments_customer ON payments.pickup_payments (customer_id, created_at DESC);
CREATE UNIQUE INDEX pickup_payments_one_succeeded ON payments.pickup_payments (pickup_id)
    WHERE status = 'succeeded';
