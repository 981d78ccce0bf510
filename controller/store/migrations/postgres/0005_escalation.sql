-- PostgreSQL twin of ../0005_escalation.sql.
ALTER TABLE tasks ADD COLUMN size TEXT COLLATE "C";
ALTER TABLE attempts ADD COLUMN size TEXT COLLATE "C";
ALTER TABLE known_failures ADD COLUMN size TEXT COLLATE "C";
