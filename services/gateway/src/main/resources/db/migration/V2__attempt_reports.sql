ALTER TABLE stage_attempts ADD COLUMN report text;
