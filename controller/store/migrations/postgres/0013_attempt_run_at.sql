-- PostgreSQL twin of ../0013_attempt_run_at.sql.
ALTER TABLE attempts ADD COLUMN run_at TEXT COLLATE "C";
