-- attempts.run_at: when the controller first saw the run step going on
-- every node of the attempt, after setup (a follow says "run started").
-- Null until then, and for attempts stored before this migration.
ALTER TABLE attempts ADD COLUMN run_at TEXT;
