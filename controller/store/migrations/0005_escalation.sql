-- job_recovery.escalate: the size (JSON {cpus, memory, accelerators}) an
-- escalation chose for a task's next attempts, the size each attempt asked
-- for, and the size a known failure failed at. NULL is the task's own
-- resources, as for every row written before escalation existed.
ALTER TABLE tasks ADD COLUMN size TEXT;
ALTER TABLE attempts ADD COLUMN size TEXT;
ALTER TABLE known_failures ADD COLUMN size TEXT;
