-- job_recovery.keep_on_failure: the cluster of a job that failed is kept,
-- for `jobs ssh`, until kept_until; it is torn down then, or when a user
-- asks (release_requested: `jobs release`, `jobs cancel`), and released_at
-- with released_reason says when and why. kept_until is written in the
-- transaction that ends the attempt, before the teardown is skipped, so a
-- controller killed at any moment never leaks the cluster nor reaps it
-- early.
ALTER TABLE attempts ADD COLUMN kept_until TEXT;
ALTER TABLE attempts ADD COLUMN release_requested TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN released_at TEXT;
ALTER TABLE attempts ADD COLUMN released_reason TEXT NOT NULL DEFAULT '';
CREATE INDEX attempts_kept ON attempts(kept_until) WHERE kept_until IS NOT NULL AND released_at IS NULL;
