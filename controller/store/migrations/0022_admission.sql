-- Admission: which PENDING jobs may start under config.yaml's limits,
-- and what the queue says of those that wait.
--
-- jobs.priority: 0-1000, higher first among waiting jobs (500 when the
-- task gives none). jobs.ask: what the job holds while it runs, as JSON
-- counts ({"jobs":1,"nodes":2,"vcpus":8,"gpu:A100":16}); '' for a job
-- stored before, which counts as one job on one node.
-- jobs.admitted_at: when admission let the job start; null while it
-- waits, and for jobs that started before admission existed (a job that
-- left PENDING holds its ask until it ends, admitted or not).
-- jobs.wait_reason, wait_place: why a waiting job waits and its place
-- among the waiting jobs (from 1), as the last admission pass found;
-- '' and null once admitted.
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 500;
ALTER TABLE jobs ADD COLUMN ask TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN admitted_at TEXT;
ALTER TABLE jobs ADD COLUMN wait_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN wait_place INTEGER;
CREATE INDEX jobs_waiting ON jobs(submitted_at) WHERE status = 'PENDING' AND admitted_at IS NULL;
