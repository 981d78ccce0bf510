-- attempts.progress: the highest progress the attempt's task reported (a
-- number written to $SORTIE_PROGRESS, recorded by the node agent with a
-- tag under the node's key). Null while none was reported, and for
-- attempts stored before this migration.
ALTER TABLE attempts ADD COLUMN progress INTEGER;
