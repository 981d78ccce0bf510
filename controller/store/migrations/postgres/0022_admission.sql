-- PostgreSQL twin of ../0022_admission.sql.
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 500;
ALTER TABLE jobs ADD COLUMN ask TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN admitted_at TEXT COLLATE "C";
ALTER TABLE jobs ADD COLUMN wait_reason TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN wait_place INTEGER;
CREATE INDEX jobs_waiting ON jobs(submitted_at) WHERE status = 'PENDING' AND admitted_at IS NULL;
