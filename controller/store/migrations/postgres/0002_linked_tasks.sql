-- PostgreSQL twin of ../0002_linked_tasks.sql.
ALTER TABLE tasks ADD COLUMN linked_job BIGINT REFERENCES jobs(id);
ALTER TABLE tasks ADD COLUMN linked_task INTEGER;
