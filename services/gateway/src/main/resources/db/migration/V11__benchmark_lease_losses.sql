-- How many runners lost a benchmark task's lease (stopped heartbeating while running it): a bundle that crashes every
-- runner that takes it fails the stage after hexforge.max-attempts losses instead of being offered forever.
ALTER TABLE benchmark_tasks ADD COLUMN lease_losses integer NOT NULL DEFAULT 0;
