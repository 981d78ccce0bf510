-- A retry from a pipeline's failed task does not run the tasks that
-- succeeded before it: each is stored SUCCEEDED with a link to the job and
-- task whose run it reuses (the run itself, never a link to a link).
ALTER TABLE tasks ADD COLUMN linked_job INTEGER REFERENCES jobs(id);
ALTER TABLE tasks ADD COLUMN linked_task INTEGER;
