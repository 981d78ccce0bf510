-- Replicas: several controllers on one store share the unfinished jobs.
-- Each running replica has a row, one per start of its process (id), named
-- by its operator (name); heartbeat_at is when it last renewed its leases
-- and lease_ttl how long they last, both in milliseconds (Unix time for
-- the first), so that times compare as numbers on every database: a
-- replica is live while heartbeat_at + lease_ttl has not passed.
CREATE TABLE replicas (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    started_at   TEXT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    lease_ttl    BIGINT NOT NULL
);
CREATE INDEX replicas_name ON replicas(name);

-- A job's lease: the replica that drives it (replicas.id, NULL for none),
-- until when (Unix milliseconds), and a generation bumped at every claim.
-- They are columns of the job, not a table of their own: a claim is one
-- UPDATE of the very rows it selects, with no row to insert and no join,
-- and the fence that every controller write checks reads the job row the
-- write's transaction reads anyway.
ALTER TABLE jobs ADD COLUMN lease_holder TEXT;
ALTER TABLE jobs ADD COLUMN lease_gen BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN lease_expires BIGINT NOT NULL DEFAULT 0;
CREATE INDEX jobs_lease ON jobs(lease_holder);
