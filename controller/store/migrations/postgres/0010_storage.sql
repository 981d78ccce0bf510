-- PostgreSQL twin of ../0010_storage.sql.
CREATE TABLE storage_syncs (
	attempt_id BIGINT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
	node INTEGER NOT NULL,
	path TEXT COLLATE "C" NOT NULL,
	store TEXT COLLATE "C" NOT NULL,
	bucket TEXT COLLATE "C" NOT NULL,
	mode TEXT COLLATE "C" NOT NULL,
	downloaded_at TEXT COLLATE "C",
	downloaded_bytes BIGINT NOT NULL DEFAULT 0,
	uploaded_at TEXT COLLATE "C",
	uploaded_bytes BIGINT NOT NULL DEFAULT 0,
	uploaded_total BIGINT NOT NULL DEFAULT 0,
	error TEXT COLLATE "C",
	PRIMARY KEY (attempt_id, node, path)
);
