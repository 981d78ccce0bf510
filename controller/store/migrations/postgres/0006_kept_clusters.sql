-- PostgreSQL twin of ../0006_kept_clusters.sql.
ALTER TABLE attempts ADD COLUMN kept_until TEXT COLLATE "C";
ALTER TABLE attempts ADD COLUMN release_requested TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN released_at TEXT COLLATE "C";
ALTER TABLE attempts ADD COLUMN released_reason TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE INDEX attempts_kept ON attempts(kept_until) WHERE kept_until IS NOT NULL AND released_at IS NULL;
