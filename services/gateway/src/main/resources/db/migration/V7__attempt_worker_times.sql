-- When the stage service reported an attempt's start and completion (queue time = worker_started_at - started_at).
ALTER TABLE stage_attempts ADD COLUMN worker_started_at timestamptz;
ALTER TABLE stage_attempts ADD COLUMN worker_finished_at timestamptz;
