-- attempts.node_key: the attempt's random key, in hex. Each node's agent
-- gets a key derived from it at start (on its stdin, never in a file the
-- task can read) and tags its exit code record with it; the controller
-- takes no record whose tag does not verify, so a task cannot forge its
-- own exit code. Attempts stored before this migration have none, and
-- their records are read as before.
ALTER TABLE attempts ADD COLUMN node_key TEXT;
