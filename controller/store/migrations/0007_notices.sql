-- A node's preemption notice, per attempt: the kind (spot-interruption,
-- rebalance, preempted), where it was heard, when, and when the cloud takes
-- the node. replaced_at is when the replacement was asked for: an attempt
-- whose notice ends its node is recovered at once, and stays open (its task
-- checkpointing, its node still there) until its node goes or the deadline
-- passes; its decision is recorded when the replacement is asked for.
ALTER TABLE attempts ADD COLUMN notice_kind TEXT;
ALTER TABLE attempts ADD COLUMN notice_source TEXT;
ALTER TABLE attempts ADD COLUMN notice_at TEXT;
ALTER TABLE attempts ADD COLUMN notice_deadline TEXT;
ALTER TABLE attempts ADD COLUMN replaced_at TEXT;
