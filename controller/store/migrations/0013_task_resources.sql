-- tasks.resources: what the task asks for, as JSON (nodes, accelerators,
-- instance type, CPUs, spot), written when the job is stored; queues show
-- it as "1x[A100:8]". Tasks stored before this migration have none and
-- show "-".
ALTER TABLE tasks ADD COLUMN resources TEXT NOT NULL DEFAULT '';
