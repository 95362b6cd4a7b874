-- A sandbox customer's invoices (docs/sandbox.md): their card sessions run on the built-in sandbox
-- processor and their bank instructions name the demo account, whatever the deployment runs for
-- live customers. Copied from the order when the invoice is issued, never changed.
ALTER TABLE payments.invoices ADD COLUMN sandbox BOOLEAN NOT NULL DEFAULT false;
