-- PostgreSQL twin of ../0011_notify_gate.sql. A trigger's WHEN cannot hold
-- a subquery here, so the function looks at notify_defaults itself.
ALTER TABLE jobs ADD COLUMN notify INTEGER NOT NULL DEFAULT 1;

CREATE TABLE notify_defaults (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	webhooks INTEGER NOT NULL
);
INSERT INTO notify_defaults (id, webhooks) VALUES (1, 1);

CREATE OR REPLACE FUNCTION notify_job_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.notify = 0 AND NOT EXISTS (SELECT 1 FROM notify_defaults WHERE id = 1 AND webhooks <> 0) THEN
		RETURN NULL;
	END IF;
	INSERT INTO notify_events (job_id, task_idx, attempt, from_status, to_status, reason, exit_codes, at)
	VALUES (NEW.id, NEW.current_task,
		(SELECT MAX(attempt) FROM attempts WHERE job_id = NEW.id AND task_idx = NEW.current_task),
		OLD.status, NEW.status,
		CASE WHEN NEW.status LIKE 'FAILED%' THEN COALESCE(NEW.failure_reason, NEW.status_reason, '')
		     ELSE COALESCE(NEW.status_reason, '') END,
		NEW.exit_codes,
		to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
	RETURN NULL;
END;
$$;
