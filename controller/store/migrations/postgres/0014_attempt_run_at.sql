-- PostgreSQL twin of ../0014_attempt_run_at.sql.
ALTER TABLE attempts ADD COLUMN run_at TEXT COLLATE "C";
