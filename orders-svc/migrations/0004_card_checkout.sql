-- Card rail: the quote's expiry (the checkout session expires with it) and the hosted checkout
-- link of the payment block, as issued with the order.
ALTER TABLE orders.orders ADD COLUMN quote_expires_at TIMESTAMPTZ;
ALTER TABLE orders.orders ADD COLUMN hosted_url TEXT;
ALTER TABLE orders.orders ADD COLUMN checkout_expires_at TIMESTAMPTZ;
