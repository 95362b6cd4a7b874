-- The operator who recorded a bank payment (the audit trail names the real operator); NULL for
-- payments no person recorded, and for bank payments recorded before operators had identities.
ALTER TABLE payments.payments ADD COLUMN recorded_by TEXT;
