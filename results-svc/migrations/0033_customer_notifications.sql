-- Consent-gated COA email (docs/notifications.md): the consent a customer records for its own
-- end customer's address, and every COA email sent (or failed) on it.

-- One row per recorded consent. recipient_key is the address in lower case: consent is looked
-- up without regard to case. At most one active (not withdrawn) consent per customer and
-- recipient.
CREATE TABLE results.recipient_consents (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    recipient_email TEXT NOT NULL,
    recipient_key TEXT NOT NULL,
    consented_by TEXT NOT NULL,
    consented_at TIMESTAMPTZ NOT NULL,
    text_version TEXT NOT NULL,
    mechanism TEXT NOT NULL CHECK (mechanism IN ('web_form', 'email_reply', 'signed_paper', 'verbal_recorded', 'in_app')),
    evidence_reference TEXT,
    recorded_at TIMESTAMPTZ NOT NULL,
    withdrawn_at TIMESTAMPTZ,
    withdrawal_mechanism TEXT CHECK (withdrawal_mechanism IN ('customer_request', 'one_click_unsubscribe')),
    CONSTRAINT recipient_consents_withdrawal_whole CHECK ((withdrawn_at IS NULL) = (withdrawal_mechanism IS NULL))
);
CREATE UNIQUE INDEX recipient_consents_one_active
    ON results.recipient_consents (customer_id, recipient_key) WHERE withdrawn_at IS NULL;
CREATE INDEX recipient_consents_listing ON results.recipient_consents (customer_id, recorded_at DESC, id DESC);

-- One row per COA email attempt. status: sending (claimed, the relay not yet answered), sent
-- (the relay accepted it) or failed (it did not; last_error says why). The per-recipient rate
-- limit counts sending and sent rows of the last 24 hours.
CREATE TABLE results.coa_emails (
    id UUID PRIMARY KEY,
    customer_id UUID NOT NULL,
    coa_id UUID NOT NULL REFERENCES results.coas (id),
    consent_id UUID NOT NULL REFERENCES results.recipient_consents (id),
    recipient_email TEXT NOT NULL,
    recipient_key TEXT NOT NULL,
    message_id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL CHECK (status IN ('sending', 'sent', 'failed')),
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    sent_at TIMESTAMPTZ
);
CREATE INDEX coa_emails_recipient ON results.coa_emails (customer_id, recipient_key, created_at);
