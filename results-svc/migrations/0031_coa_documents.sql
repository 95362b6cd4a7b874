-- The PDF of each published COA, kept in the blob store (platform::blobs, RESULTS_BLOB_STORE)
-- the first time it is rendered: at publication, or at the first download of a COA published
-- before this migration. From then on every download serves exactly those bytes, checked
-- against document_sha256, so a certificate never changes after issue, even when the renderer
-- does (docs/results.md, "The COA document").
ALTER TABLE results.coas
    ADD COLUMN document_key TEXT,
    ADD COLUMN document_sha256 TEXT,
    ADD CONSTRAINT coas_document_whole CHECK ((document_key IS NULL) = (document_sha256 IS NULL));
