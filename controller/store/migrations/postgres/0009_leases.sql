-- PostgreSQL twin of ../0009_leases.sql.
CREATE TABLE replicas (
    id           TEXT COLLATE "C" PRIMARY KEY,
    name         TEXT COLLATE "C" NOT NULL,
    host         TEXT COLLATE "C" NOT NULL,
    pid          INTEGER NOT NULL,
    started_at   TEXT COLLATE "C" NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    lease_ttl    BIGINT NOT NULL
);
CREATE INDEX replicas_name ON replicas(name);
ALTER TABLE jobs ADD COLUMN lease_holder TEXT COLLATE "C";
ALTER TABLE jobs ADD COLUMN lease_gen BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN lease_expires BIGINT NOT NULL DEFAULT 0;
CREATE INDEX jobs_lease ON jobs(lease_holder);
