-- The users of a shared server and their tokens. Only a token's SHA-256 is
-- kept: a token is 32 random bytes, which no one can guess from its hash,
-- so a slow password hash would buy nothing and cost every request.
-- revoked_at set means the token no longer opens anything; the name stays
-- taken so that the jobs it owns keep one meaning.
CREATE TABLE users (
	name       TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL UNIQUE,
	admin      INTEGER NOT NULL DEFAULT 0,
	created_at TEXT NOT NULL,
	revoked_at TEXT
);
-- Who launched a job: the server's user, or the OS user of a CLI that
-- launched without a server. Jobs stored before owners existed have ''.
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_owner ON jobs(owner);
-- Who asked for a job's cancel ('' when none was asked, or before this
-- column). A retry's asker is the new job's requested_by.
ALTER TABLE jobs ADD COLUMN cancelled_by TEXT NOT NULL DEFAULT '';
-- Every cancel, retry and forget, with who asked: a forget leaves no row
-- behind to hold it, and a job is cancelled once but may be asked twice.
CREATE TABLE actions (
	id     INTEGER PRIMARY KEY AUTOINCREMENT,
	at     TEXT NOT NULL,
	actor  TEXT NOT NULL,
	verb   TEXT NOT NULL,              -- cancel | retry | forget
	job_id INTEGER,                    -- the job acted on (forget: the failure's job)
	detail TEXT NOT NULL DEFAULT ''    -- retry: the new job's id and reason; forget: the key
);
CREATE INDEX actions_job ON actions(job_id);
