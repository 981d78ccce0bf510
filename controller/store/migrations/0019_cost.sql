-- What attempts and jobs cost.
--
-- attempts: how the attempt's cluster is billed, written when its launch
-- is requested (billed_from: the request; instance_type, spot and nodes:
-- what it asked for; min_seconds: the cloud's minimum billed time per
-- instance, 0 on a cluster reused from the attempt before;
-- price_per_hour: one node's price at launch, null when no price was
-- known), and what it cost, written in the transaction that ends it (cost:
-- null when no price was known; cost_estimate: 1 when a price was stale or
-- not known for the whole time).
ALTER TABLE attempts ADD COLUMN billed_from TEXT;
ALTER TABLE attempts ADD COLUMN instance_type TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN spot INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN nodes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN min_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN price_per_hour REAL;
ALTER TABLE attempts ADD COLUMN cost REAL;
ALTER TABLE attempts ADD COLUMN cost_estimate INTEGER NOT NULL DEFAULT 0;

-- jobs: the sum of its ended attempts' costs (null while none is known),
-- whether it is an estimate, and the attempt that is billing now: its
-- cluster's price per hour (every node; null when not known) and since
-- when. A listing adds cost_rate x (now - cost_since) to cost, without
-- reading any attempt.
ALTER TABLE jobs ADD COLUMN cost REAL;
ALTER TABLE jobs ADD COLUMN cost_estimate INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN cost_rate REAL;
ALTER TABLE jobs ADD COLUMN cost_since TEXT;
