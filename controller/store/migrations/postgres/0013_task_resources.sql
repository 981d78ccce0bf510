-- PostgreSQL twin of ../0013_task_resources.sql.
ALTER TABLE tasks ADD COLUMN resources TEXT COLLATE "C" NOT NULL DEFAULT '';
