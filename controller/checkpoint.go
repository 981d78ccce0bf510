package controller

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/store"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy"
)

// checkpointWait bounds one listing of a bucket for its newest object: a
// store that does not answer leaves the attempt without a checkpoint, not
// the job waiting.
const checkpointWait = 30 * time.Second

// ranTask says an attempt with this outcome ran its task (or began to):
// what it left in its buckets may be progress.
func ranTask(o strategy.Outcome) bool {
	switch o {
	case strategy.LaunchFailed, strategy.Cancelled, strategy.ControllerError:
		return false
	}
	return true
}

// recordCheckpoint keeps, with a, the newest object of task's
// MOUNT_CACHED buckets now (the sync program lists each), which the
// progress accounting counts when it was written during a and is newer
// than any before (strategy.Progress). A bucket that cannot be listed is
// logged and left out: no checkpoint seen is no progress, never an error
// of the job. An attempt looked at twice (at a preemption notice, then at
// its end, when it may have saved its state once more) keeps the newer.
func (c *jobStep) recordCheckpoint(ctx context.Context, task *schema.Task, a *store.Attempt) {
	mounts, _ := task.Buckets("", clouds.Schema())
	var newest *strategy.Checkpoint
	for _, m := range mounts {
		if m.Mode != schema.ModeMountCached {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, checkpointWait)
		code, out, err := node.RunSync(lctx, "newest", "-store", m.Store, "-bucket", m.Bucket, "-prefix", m.Prefix)
		cancel()
		if err != nil || code != 0 {
			c.logger(ctx).Warn("list the checkpoints of a MOUNT_CACHED bucket", "field", m.Field, "bucket", m.Bucket, "err", err, "output", out)
			continue
		}
		if out == "" {
			continue // empty: nothing saved yet
		}
		var o struct {
			Key      string    `json:"key"`
			Modified time.Time `json:"modified"`
		}
		lines := strings.Split(out, "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &o); err != nil || o.Key == "" {
			c.logger(ctx).Warn("read the newest object of a MOUNT_CACHED bucket", "field", m.Field, "bucket", m.Bucket, "output", out)
			continue
		}
		if newest == nil || o.Modified.After(newest.Modified) {
			newest = &strategy.Checkpoint{Key: bucketURL(m.Store, m.Bucket, o.Key), Modified: o.Modified.UTC()}
		}
	}
	if newest == nil || a.Checkpoint != nil && !newest.Modified.After(a.Checkpoint.Modified) {
		return
	}
	if err := c.Store.RecordCheckpoint(ctx, a.ID, *newest); err != nil {
		c.logger(ctx).Warn("record the attempt's checkpoint", "attempt", a.ID, "err", err)
		return
	}
	a.Checkpoint = newest
}

// bucketURL is an object's address as users write buckets: s3://b/k, gs://b/k.
func bucketURL(store, bucket, key string) string {
	scheme := store
	if store == schema.StoreGCS {
		scheme = "gs"
	}
	return scheme + "://" + bucket + "/" + key
}
