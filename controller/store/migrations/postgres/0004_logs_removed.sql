-- PostgreSQL twin of ../0004_logs_removed.sql.
ALTER TABLE jobs ADD COLUMN logs_removed_at TEXT COLLATE "C";
ALTER TABLE jobs ADD COLUMN logs_removed_reason TEXT COLLATE "C";
CREATE INDEX jobs_logs_kept ON jobs(ended_at) WHERE logs_removed_at IS NULL AND ended_at IS NOT NULL;
