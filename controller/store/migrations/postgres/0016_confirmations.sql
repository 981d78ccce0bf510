-- PostgreSQL twin of ../0016_confirmations.sql.
CREATE TABLE confirmations (
	job_id     BIGINT NOT NULL,
	task_idx   INTEGER NOT NULL,
	attempt    INTEGER NOT NULL,
	input_key  TEXT COLLATE "C" NOT NULL DEFAULT '',
	failed     TEXT COLLATE "C" NOT NULL,
	confirming TEXT COLLATE "C",
	verdict    TEXT COLLATE "C",
	started_at TEXT COLLATE "C" NOT NULL,
	decided_at TEXT COLLATE "C",
	PRIMARY KEY (job_id, task_idx, attempt)
);
CREATE INDEX confirmations_key ON confirmations(input_key);
