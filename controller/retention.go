package controller

import (
	"context"
	"fmt"
	"os"

	"sortie/controller/config"
	"sortie/controller/home"
)

// retentionBatch bounds the jobs one sweep removes the logs of; the next
// sweep takes the rest.
const retentionBatch = 1000

// RemoveExpiredLogs removes the kept logs of jobs that ended more than
// controller.log_retention ago and records when and why, which `jobs logs`
// and `jobs failures` then say. Removing comes before the record: a
// controller stopped between the two removes nothing twice, it finds the
// job again and records it.
func (c *Controller) RemoveExpiredLogs(ctx context.Context) error {
	keep := c.Config.Controller.LogRetention
	if keep <= 0 {
		keep = config.Duration(config.DefaultLogRetention)
	}
	now := c.Now()
	ids, err := c.Store.JobsWithLogsEndedBefore(ctx, now.Add(-keep.D()), retentionBatch)
	if err != nil {
		return fmt.Errorf("find logs past controller.log_retention: %w", err)
	}
	reason := fmt.Sprintf("the job ended more than controller.log_retention (%s) before", showRetention(keep))
	for _, id := range ids {
		dir := home.JobLogDir(c.Config.Home, id)
		if err := os.RemoveAll(dir); err != nil {
			c.Log.Warn("remove kept logs", "job", id, "dir", dir, "err", err)
			continue
		}
		if err := c.Store.MarkLogsRemoved(ctx, id, now, reason); err != nil {
			return fmt.Errorf("record the removal of job %d's logs: %w", id, err)
		}
		c.Log.Info("removed kept logs past retention", "job", id)
	}
	return nil
}

// sweepLogs is RemoveExpiredLogs in the sweep: a failure is logged, and
// the next sweep tries again.
func (c *Controller) sweepLogs(ctx context.Context) {
	if err := c.RemoveExpiredLogs(ctx); err != nil && ctx.Err() == nil {
		c.Log.Warn("log retention", "err", err)
	}
}

// showRetention writes whole days as days: 30d rather than 720h0m0s.
func showRetention(d config.Duration) string {
	const day = 24 * 60 * 60 * 1e9
	if d.D()%day == 0 {
		return fmt.Sprintf("%dd", d.D()/day)
	}
	return d.D().String()
}
