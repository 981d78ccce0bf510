package controller

import (
	"context"
	"fmt"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// keepFor is how long task i of j keeps its cluster after the job fails
// (job_recovery.keep_on_failure). p may be nil (the endings that need no
// policy, a max_duration among them): the spec is read then, and a spec
// that cannot be read keeps nothing.
func (c *Controller) keepFor(j *store.Job, p *schema.Pipeline, i int) time.Duration {
	if p == nil {
		var err error
		if p, err = schema.Unmarshal(j.Spec, clouds.Schema()); err != nil {
			return 0
		}
	}
	if i < 0 || i >= len(p.Tasks) {
		return 0
	}
	return p.Tasks[i].Recovery().KeepOnFailure.D()
}

// ReleaseKept tears down the kept clusters (keep_on_failure) whose time
// has come or that a user asked to release (`jobs release`, `jobs
// cancel`). Each is marked released in the store before it is torn down:
// a controller killed in between leaves a cluster that no attempt holds,
// which the orphan sweep reaps.
func (c *Controller) ReleaseKept(ctx context.Context) error {
	kept, err := c.Store.KeptAttempts(ctx)
	if err != nil {
		return fmt.Errorf("list kept clusters: %w", err)
	}
	now := c.Now()
	for _, a := range kept {
		reason, due := strategy.ReleaseDue(*a.KeptUntil, a.ReleaseRequested, now)
		if !due {
			continue
		}
		marked, err := c.Store.MarkReleased(ctx, a.ID, reason)
		if err != nil {
			return fmt.Errorf("release %s: %w", a.Cluster, err)
		}
		if !marked {
			continue
		}
		c.Log.Info("releasing kept cluster", "job", a.JobID, "cluster", a.Cluster, "reason", reason)
		actx, cancel := afterEnd(ctx)
		c.terminate(actx, a)
		cancel()
	}
	return nil
}
