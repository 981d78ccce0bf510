-- The outbox is written only for jobs a webhook can want: most jobs name
-- no webhook and most controllers have no default ones, and an event no
-- webhook wants was written, read and deleted for nothing (migration
-- 0003's trigger fired on every change of every job's status).
--
-- jobs.notify: the job's spec names notify (some task may have webhooks of
-- its own). Jobs stored before this migration keep 1: their events are
-- written as before.
ALTER TABLE jobs ADD COLUMN notify INTEGER NOT NULL DEFAULT 1;

-- notify_defaults, one row: whether the controller has default webhooks
-- (config.yaml notify.webhooks), which every task without notify posts to.
-- Its notifier writes it when it starts; until one does it says yes.
CREATE TABLE notify_defaults (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	webhooks INTEGER NOT NULL
);
INSERT INTO notify_defaults (id, webhooks) VALUES (1, 1);

DROP TRIGGER notify_job_status;
CREATE TRIGGER notify_job_status AFTER UPDATE OF status ON jobs
WHEN OLD.status <> NEW.status AND (NEW.notify <> 0 OR (SELECT webhooks FROM notify_defaults WHERE id = 1) <> 0)
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
