-- Orders of sandbox customers (docs/sandbox.md): the flag is copied from the placing key's
-- principal when the order is placed and never changes, so turning a customer's flag on later
-- cannot make a live order simulable, and the order view says `sandbox: true`.
ALTER TABLE orders.orders ADD COLUMN sandbox BOOLEAN NOT NULL DEFAULT false;
