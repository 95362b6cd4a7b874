-- Supplementary invoices of add-ons (docs/payments.md, "Add-on invoices"): an add-on ordered on
-- a retained sample is billed by its own invoice on the order's rail, bound to the add-on id.
-- An order keeps exactly one invoice of its own (addon_id NULL) and each add-on has exactly one;
-- CreateInvoice and its retries converge on these two unique indexes.
ALTER TABLE payments.invoices ADD COLUMN addon_id UUID;
ALTER TABLE payments.invoices DROP CONSTRAINT invoices_customer_order_key;
CREATE UNIQUE INDEX invoices_customer_order_key ON payments.invoices (customer_id, order_id)
    WHERE addon_id IS NULL;
CREATE UNIQUE INDEX invoices_one_per_addon ON payments.invoices (addon_id) WHERE addon_id IS NOT NULL;
