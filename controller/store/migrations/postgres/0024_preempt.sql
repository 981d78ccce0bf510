-- PostgreSQL twin of ../0024_preempt.sql.
ALTER TABLE jobs ADD COLUMN yield_for BIGINT;
ALTER TABLE jobs ADD COLUMN yield_reason TEXT COLLATE "C" NOT NULL DEFAULT '';
