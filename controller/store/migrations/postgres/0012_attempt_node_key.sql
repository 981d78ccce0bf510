-- PostgreSQL twin of ../0012_attempt_node_key.sql.
ALTER TABLE attempts ADD COLUMN node_key TEXT COLLATE "C";
