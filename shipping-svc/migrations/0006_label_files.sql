-- Label PDFs move to the blob store (SHIPPING_BLOB_STORE, platform::blobs): a new label's row
-- names its file (blob_key, labels/<shipment id>/<sha256>.pdf) and keeps no copy; the rows of
-- labels bought before keep their PDF inline until shipping-svc moves it (at start, or when the
-- label is read), then drop it (docs/shipping.md, "Label files").
ALTER TABLE shipping.labels
    ADD COLUMN blob_key TEXT,
    ALTER COLUMN pdf DROP NOT NULL,
    ADD CONSTRAINT labels_file CHECK (pdf IS NOT NULL OR blob_key IS NOT NULL);
