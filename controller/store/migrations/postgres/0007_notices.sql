-- PostgreSQL twin of ../0007_notices.sql.
ALTER TABLE attempts ADD COLUMN notice_kind TEXT COLLATE "C";
ALTER TABLE attempts ADD COLUMN notice_source TEXT COLLATE "C";
ALTER TABLE attempts ADD COLUMN notice_at TEXT COLLATE "C";
ALTER TABLE attempts ADD COLUMN notice_deadline TEXT COLLATE "C";
ALTER TABLE attempts ADD COLUMN replaced_at TEXT COLLATE "C";
