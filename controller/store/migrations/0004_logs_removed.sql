-- Log retention: when the sweep removed a job's kept logs, and why.
ALTER TABLE jobs ADD COLUMN logs_removed_at TEXT;
ALTER TABLE jobs ADD COLUMN logs_removed_reason TEXT;
CREATE INDEX jobs_logs_kept ON jobs(ended_at) WHERE logs_removed_at IS NULL AND ended_at IS NOT NULL;
