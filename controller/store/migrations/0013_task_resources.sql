-- tasks.resources: what the task asks for, as queues show it ("1x[A100:8]",
-- "2x[CPU:4+][Spot]"), written when the job is stored. Tasks stored
-- before this migration have none and show "-".
ALTER TABLE tasks ADD COLUMN resources TEXT NOT NULL DEFAULT '';
