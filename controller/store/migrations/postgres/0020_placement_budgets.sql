-- PostgreSQL twin of ../0020_placement_budgets.sql.
CREATE INDEX attempts_preemptions ON attempts(ended_at) WHERE outcome = 'preempted';

ALTER TABLE tasks ADD COLUMN on_demand INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN on_demand INTEGER NOT NULL DEFAULT 0;

CREATE TABLE user_budgets (
    name    TEXT COLLATE "C" PRIMARY KEY,
    monthly DOUBLE PRECISION,
    set_at  TEXT COLLATE "C" NOT NULL,
    set_by  TEXT COLLATE "C" NOT NULL DEFAULT ''
);
