-- Notifications: every change of a job's status is written to an outbox in
-- the transaction that makes it (the trigger below, so no path that moves
-- a status can forget it). The controller's notifier turns each event into
-- one delivery per webhook that wants it, and records each delivery before
-- and after it sends.
CREATE TABLE notify_events (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	job_id      INTEGER NOT NULL REFERENCES jobs(id),
	task_idx    INTEGER NOT NULL,
	attempt     INTEGER,                 -- the task's newest attempt, if any
	from_status TEXT NOT NULL,
	to_status   TEXT NOT NULL,
	reason      TEXT NOT NULL DEFAULT '',
	exit_codes  TEXT,                    -- the job's exit_codes at the change
	at          TEXT NOT NULL,
	dispatched  INTEGER NOT NULL DEFAULT 0 -- its deliveries are written
);
CREATE INDEX notify_events_new ON notify_events(id) WHERE dispatched = 0;

CREATE TRIGGER notify_job_status AFTER UPDATE OF status ON jobs
WHEN OLD.status <> NEW.status
BEGIN
	INSERT INTO notify_events (job_id, task_idx, attempt, from_status, to_status, reason, exit_codes, at)
	VALUES (NEW.id, NEW.current_task,
		(SELECT MAX(attempt) FROM attempts WHERE job_id = NEW.id AND task_idx = NEW.current_task),
		OLD.status, NEW.status,
		CASE WHEN NEW.status LIKE 'FAILED%' THEN COALESCE(NEW.failure_reason, NEW.status_reason, '')
		     ELSE COALESCE(NEW.status_reason, '') END,
		NEW.exit_codes,
		strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;

CREATE TABLE notify_deliveries (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	event_id     INTEGER NOT NULL REFERENCES notify_events(id),
	job_id       INTEGER NOT NULL,
	url          TEXT NOT NULL,
	event        TEXT NOT NULL,          -- status | recovery | failed | succeeded
	secret       TEXT NOT NULL DEFAULT '', -- the name of the signing key, never the key
	state        TEXT NOT NULL,          -- pending | sending | delivered | failed
	tries        INTEGER NOT NULL DEFAULT 0,
	next_try_at  TEXT NOT NULL,
	http_status  INTEGER,                -- of the last try that got an answer
	last_error   TEXT NOT NULL DEFAULT '',
	created_at   TEXT NOT NULL,
	sent_at      TEXT,                   -- the last try began
	done_at      TEXT,                   -- delivered, or given up
	UNIQUE (event_id, url)
);
CREATE INDEX notify_deliveries_due ON notify_deliveries(next_try_at) WHERE state IN ('pending', 'sending');
CREATE INDEX notify_deliveries_job ON notify_deliveries(job_id);
