-- Quarantine: a placement where different jobs keep failing for reasons
-- that are not their inputs' is tried last for a while. Which placements
-- are is computed from the attempts themselves (where each ended, how and
-- when), so that every replica and every user of the store sees the same
-- answer without one more thing to keep in step; this index keeps the
-- look at the last hour's failures cheap however many attempts are stored.
CREATE INDEX attempts_placement_failures ON attempts(ended_at) WHERE outcome IN ('node_lost', 'setup_failure');

-- A user's clear of a quarantined placement: failures there up to
-- cleared_at no longer count. One row per placement, the last clear.
CREATE TABLE quarantine_clears (
    cloud      TEXT NOT NULL,
    region     TEXT NOT NULL,
    zone       TEXT NOT NULL,
    cleared_at TEXT NOT NULL,
    cleared_by TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (cloud, region, zone)
);
