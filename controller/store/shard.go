package store

import "context"

// A running controller spreads its work over the poll interval: each tick
// reconciles one shard of the unfinished jobs (id % shards == shard), so
// that a long queue is never checked all in the same instant.

// ActiveJobsShard returns the unfinished jobs of one shard in id order;
// shards <= 1 means every unfinished job.
func (s *Store) ActiveJobsShard(ctx context.Context, shards, shard int) ([]*Job, error) {
	if shards <= 1 {
		return findJobs(ctx, s.db, `WHERE `+activeSQL+` ORDER BY id`)
	}
	return findJobs(ctx, s.db, `WHERE `+activeSQL+` AND id % ? = ? ORDER BY id`, shards, shard)
}

// OpenAttemptsShard returns the attempts that have not ended of one shard's
// jobs; shards <= 1 means all of them.
func (s *Store) OpenAttemptsShard(ctx context.Context, shards, shard int) ([]*Attempt, error) {
	if shards <= 1 {
		return s.OpenAttempts(ctx)
	}
	return findAttempts(ctx, s.db, `WHERE `+openSQL+` AND job_id % ? = ? ORDER BY id`, shards, shard)
}
