-- PostgreSQL twin of ../0015_attempt_progress.sql.
ALTER TABLE attempts ADD COLUMN progress BIGINT;
