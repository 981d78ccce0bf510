-- confirmations: each failure run again to tell whether it is deterministic
-- (job_recovery.confirm_failures). failed is the failed attempt and confirming
-- the run that confirmed it or not, each as JSON (attempt, outcome,
-- exit_codes, cloud, region, zone); verdict ('deterministic' or 'flaky'),
-- confirming and decided_at are null while the confirmation runs, and stay
-- null for one that ended without a verdict (the job cancelled).
CREATE TABLE confirmations (
	job_id     INTEGER NOT NULL,
	task_idx   INTEGER NOT NULL,
	attempt    INTEGER NOT NULL,
	input_key  TEXT NOT NULL DEFAULT '',
	failed     TEXT NOT NULL,
	confirming TEXT,
	verdict    TEXT,
	started_at TEXT NOT NULL,
	decided_at TEXT,
	PRIMARY KEY (job_id, task_idx, attempt)
);
CREATE INDEX confirmations_key ON confirmations(input_key);
