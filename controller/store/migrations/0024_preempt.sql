-- Preemption between jobs (limits.preemption: lower_priority): a waiting
-- job of higher priority asks admitted jobs of lower priority to give it
-- their place under a limit.
--
-- jobs.yield_for: the waiting job this one was asked to make room for, by
-- the admission pass that chose it; null when none. The job is stopped as
-- a cancel stops it, and the end of its attempt (outcome
-- preempted_by_priority, action requeue) sends it back to PENDING, not
-- admitted, and clears it; it holds its ask until then.
-- jobs.yield_reason: what the stop records as the attempt's reason
-- ('preempted by priority: job 12 (priority 900) takes its place under the
-- server limit'); '' when none.
ALTER TABLE jobs ADD COLUMN yield_for INTEGER;
ALTER TABLE jobs ADD COLUMN yield_reason TEXT NOT NULL DEFAULT '';
