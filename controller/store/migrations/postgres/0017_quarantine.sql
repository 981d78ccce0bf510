-- PostgreSQL twin of ../0017_quarantine.sql.
CREATE INDEX attempts_placement_failures ON attempts(ended_at) WHERE outcome IN ('node_lost', 'setup_failure');

CREATE TABLE quarantine_clears (
    cloud      TEXT COLLATE "C" NOT NULL,
    region     TEXT COLLATE "C" NOT NULL,
    zone       TEXT COLLATE "C" NOT NULL,
    cleared_at TEXT COLLATE "C" NOT NULL,
    cleared_by TEXT COLLATE "C" NOT NULL DEFAULT '',
    PRIMARY KEY (cloud, region, zone)
);
