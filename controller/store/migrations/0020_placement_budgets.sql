-- Spot candidates in zones that preempted recently are tried last. The
-- history is read from the attempts themselves (where each preempted one
-- ran and when it ended), so every replica sees the same; this index keeps
-- the look at the last hours' preemptions cheap however many are stored.
CREATE INDEX attempts_preemptions ON attempts(ended_at) WHERE outcome = 'preempted';

-- job_recovery.on_demand_after: once a decision switched a spot task to
-- on-demand, its later attempts launch on-demand (tasks.on_demand), and
-- each attempt says how it was launched (attempts.on_demand), so what it
-- cost is counted at the right price.
ALTER TABLE tasks ADD COLUMN on_demand INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN on_demand INTEGER NOT NULL DEFAULT 0;

-- A team server's monthly budget per user, in dollars; a user without a
-- row has config.yaml's budgets.monthly. monthly NULL is no budget, even
-- when config.yaml sets a default.
CREATE TABLE user_budgets (
    name    TEXT PRIMARY KEY,
    monthly REAL,
    set_at  TEXT NOT NULL,
    set_by  TEXT NOT NULL DEFAULT ''
);
