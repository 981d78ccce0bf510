-- PostgreSQL twin of ../0021_placement_levels.sql.
ALTER TABLE attempts ADD COLUMN instance_type TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN host TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN checkpoint TEXT COLLATE "C";
ALTER TABLE attempts ADD COLUMN checkpoint_at TEXT COLLATE "C";

ALTER TABLE quarantine_clears ADD COLUMN instance_type TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE quarantine_clears ADD COLUMN host TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE quarantine_clears DROP CONSTRAINT quarantine_clears_pkey;
ALTER TABLE quarantine_clears ADD PRIMARY KEY (cloud, region, zone, instance_type, host);
