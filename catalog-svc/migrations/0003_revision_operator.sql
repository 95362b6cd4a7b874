-- The operator who imported each revision (the audit trail names the real operator; `seed` for
-- the seed file read at start, empty for revisions imported before operators had identities).
ALTER TABLE catalog.revisions ADD COLUMN imported_by TEXT NOT NULL DEFAULT '';
