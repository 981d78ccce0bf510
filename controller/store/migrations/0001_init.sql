-- Jobs, their tasks (a pipeline's stages), every attempt of every task, every
-- failed launch try, and the known failures by input key.
CREATE TABLE jobs (
	id               INTEGER PRIMARY KEY AUTOINCREMENT,
	name             TEXT NOT NULL,
	status           TEXT NOT NULL,
	status_reason    TEXT NOT NULL DEFAULT '',
	failure_reason   TEXT,
	spec             TEXT NOT NULL,          -- the pipeline as JSON, without secret values
	base_dir         TEXT NOT NULL DEFAULT '', -- directory of the task file (workdir, file_mounts)
	current_task     INTEGER NOT NULL DEFAULT 0,
	num_tasks        INTEGER NOT NULL DEFAULT 1,
	cancel_requested INTEGER NOT NULL DEFAULT 0,
	next_action_at   TEXT,                   -- back-off: nothing happens before this time
	input_key        TEXT,
	-- Sums over the tasks and the last attempt's exit codes, kept with the job so
	-- the queue reads one row per job.
	recovery_count     INTEGER NOT NULL DEFAULT 0,
	restarts_on_errors INTEGER NOT NULL DEFAULT 0,
	exit_codes         TEXT,
	retried_in       INTEGER,               -- the newest retry of this job
	retry_of         INTEGER REFERENCES jobs(id),
	root_id          INTEGER,
	trigger          TEXT NOT NULL DEFAULT 'user',
	requested_by     TEXT NOT NULL DEFAULT '',
	retry_reason     TEXT NOT NULL DEFAULT '',
	overrides        TEXT,                   -- JSON list of {path, old, new}
	submitted_at     TEXT NOT NULL,
	started_at       TEXT,
	ended_at         TEXT
);
CREATE INDEX jobs_status ON jobs(status);
CREATE INDEX jobs_name ON jobs(name);
CREATE INDEX jobs_retry_of ON jobs(retry_of);
CREATE INDEX jobs_root_id ON jobs(root_id);

CREATE TABLE tasks (
	job_id             INTEGER NOT NULL REFERENCES jobs(id),
	idx                INTEGER NOT NULL,
	name               TEXT NOT NULL DEFAULT '',
	status             TEXT NOT NULL,
	recovery_count     INTEGER NOT NULL DEFAULT 0,
	restarts_on_errors INTEGER NOT NULL DEFAULT 0,
	launch_round       INTEGER NOT NULL DEFAULT 0,
	preempted_in       TEXT,                 -- JSON placement of the last preemption, for the strategy
	input_key          TEXT,
	started_at         TEXT,
	ended_at           TEXT,
	PRIMARY KEY (job_id, idx)
);

CREATE TABLE attempts (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	job_id       INTEGER NOT NULL REFERENCES jobs(id),
	task_idx     INTEGER NOT NULL,
	attempt      INTEGER NOT NULL,
	cluster      TEXT NOT NULL,
	cloud        TEXT NOT NULL DEFAULT '',
	region       TEXT NOT NULL DEFAULT '',
	zone         TEXT NOT NULL DEFAULT '',
	instance_ids TEXT,                       -- JSON list, rank order
	state        TEXT NOT NULL,              -- launching | starting | running | ended
	outcome      TEXT,
	exit_codes   TEXT,                       -- JSON list, one per node, null when unknown
	reason       TEXT NOT NULL DEFAULT '',   -- why the attempt ended
	action       TEXT NOT NULL DEFAULT '',   -- what sortie decided: recover, restart, next_task, ...
	decision     TEXT NOT NULL DEFAULT '',   -- why, as shown to the user
	unreachable  INTEGER NOT NULL DEFAULT 0, -- consecutive failed checks of a running node
	started_at   TEXT NOT NULL,
	ended_at     TEXT,
	UNIQUE (job_id, task_idx, attempt)
);
CREATE INDEX attempts_open ON attempts(state) WHERE state <> 'ended';

CREATE TABLE launch_tries (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	job_id   INTEGER NOT NULL REFERENCES jobs(id),
	task_idx INTEGER NOT NULL,
	attempt  INTEGER NOT NULL,
	round    INTEGER NOT NULL,
	cloud    TEXT NOT NULL,
	region   TEXT NOT NULL,
	zone     TEXT NOT NULL,
	class    TEXT NOT NULL,
	message  TEXT NOT NULL,
	at       TEXT NOT NULL
);
CREATE INDEX launch_tries_job ON launch_tries(job_id);

CREATE TABLE known_failures (
	input_key   TEXT PRIMARY KEY,
	job_id      INTEGER NOT NULL,
	task_name   TEXT NOT NULL DEFAULT '',
	status      TEXT NOT NULL,
	exit_codes  TEXT,
	log_path    TEXT NOT NULL DEFAULT '',
	recorded_at TEXT NOT NULL
);
