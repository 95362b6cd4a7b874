-- Operator ids: four eyes compares the operators who entered, submitted and approved results by
-- the stable id their staff tokens carry, never by name. NULL on what was recorded before
-- operator ids; four eyes then compares that entry's name (domain::coa::Coa::check_four_eyes).
-- (Numbered 0010, after every existing migration and clear of the next ones in flight.)
ALTER TABLE results.coas ADD COLUMN submitted_by_id UUID, ADD COLUMN approved_by_id UUID;
ALTER TABLE results.analyte_results ADD COLUMN analyst_id UUID;
