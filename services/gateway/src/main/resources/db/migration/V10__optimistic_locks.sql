-- Optimistic locking of jobs and attempts: concurrent transitions (cancel vs. completion, stall re-dispatch vs. a late
-- event) no longer overwrite each other; the loser re-reads and tries again.
ALTER TABLE jobs ADD COLUMN version bigint NOT NULL DEFAULT 0;
ALTER TABLE stage_attempts ADD COLUMN version bigint NOT NULL DEFAULT 0;
