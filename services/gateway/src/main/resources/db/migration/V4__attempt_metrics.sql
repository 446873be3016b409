ALTER TABLE stage_attempts ADD COLUMN metrics text;
