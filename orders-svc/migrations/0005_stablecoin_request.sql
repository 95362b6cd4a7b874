-- Stablecoin rail: the payment request issued with the order (token, target, exact amount,
-- reference, expiry), as payments-svc answered RequestStablecoinPayment. NULL on other rails.
ALTER TABLE orders.orders ADD COLUMN stablecoin_request JSONB;
