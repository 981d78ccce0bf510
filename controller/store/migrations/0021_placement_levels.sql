-- What a failure counts against, finer than a zone, and the checkpoints
-- that show a task's progress.
--
-- attempts.instance_type: the instance type the attempt asked for, ''
-- when it asked by CPUs and memory. attempts.host: the Kubernetes node
-- every node of the attempt ran on, '' on VM clouds and when its pods ran
-- on several nodes. Quarantine counts a failure against the type in its
-- zone, or against the node (strategy.QuarantineKey). Attempts stored
-- before this migration have neither and count against their zone only.
ALTER TABLE attempts ADD COLUMN instance_type TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN host TEXT NOT NULL DEFAULT '';

-- attempts.checkpoint, checkpoint_at: the newest object of the task's
-- MOUNT_CACHED buckets when the attempt ended, and its last-modified
-- time; null when the task has no such bucket, it was empty, or it could
-- not be listed. A newer checkpoint than any earlier attempt's, written
-- during the attempt, is progress (max_restarts_without_progress).
ALTER TABLE attempts ADD COLUMN checkpoint TEXT;
ALTER TABLE attempts ADD COLUMN checkpoint_at TEXT;

-- The clears of every level: instance_type and host are '' for a zone's.
CREATE TABLE quarantine_clears_levels (
    cloud         TEXT NOT NULL,
    region        TEXT NOT NULL,
    zone          TEXT NOT NULL,
    instance_type TEXT NOT NULL DEFAULT '',
    host          TEXT NOT NULL DEFAULT '',
    cleared_at    TEXT NOT NULL,
    cleared_by    TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (cloud, region, zone, instance_type, host)
);
INSERT INTO quarantine_clears_levels (cloud, region, zone, cleared_at, cleared_by)
    SELECT cloud, region, zone, cleared_at, cleared_by FROM quarantine_clears;
DROP TABLE quarantine_clears;
ALTER TABLE quarantine_clears_levels RENAME TO quarantine_clears;
