-- What a node's bucket syncs did, per attempt, node and mount, as its agent
-- last reported it: the download before setup, and the last upload of a
-- MOUNT_CACHED bucket (when it finished, what it moved, what every upload
-- of the attempt moved), and the last sync's error.
CREATE TABLE storage_syncs (
	attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
	node INTEGER NOT NULL,
	path TEXT NOT NULL,
	store TEXT NOT NULL,
	bucket TEXT NOT NULL,
	mode TEXT NOT NULL,
	downloaded_at TEXT,
	downloaded_bytes INTEGER NOT NULL DEFAULT 0,
	uploaded_at TEXT,
	uploaded_bytes INTEGER NOT NULL DEFAULT 0,
	uploaded_total INTEGER NOT NULL DEFAULT 0,
	error TEXT,
	PRIMARY KEY (attempt_id, node, path)
);
