package controller

import (
	"context"
	"fmt"

	"sortie/controller/store"
	"sortie/provision/node"
	"sortie/strategy"
)

// recordProgress keeps the highest progress a's nodes reported, as their
// agents recorded it, when it is above what the attempt has stored.
func (c *jobStep) recordProgress(ctx context.Context, a *store.Attempt, sts []node.Status) {
	var top *int64
	for _, st := range sts {
		if st.Progress != nil && (top == nil || *st.Progress > *top) {
			top = st.Progress
		}
	}
	if top == nil || (a.Progress != nil && *top <= *a.Progress) {
		return
	}
	if _, err := c.Store.RecordProgress(ctx, a.ID, *top); err != nil {
		c.Log.Warn("record the task's progress", "attempt", a.ID, "error", err)
		return
	}
	n := *top
	a.Progress = &n
}

// progressState replays the progress accounting over the attempts of a's
// task before a (strategy.ProgressOf). Like the recoveries, it is read
// from the attempts, which keep each one's progress and decision durably.
func (c *Controller) progressState(ctx context.Context, a *store.Attempt) (strategy.ProgressState, error) {
	all, err := c.Store.Attempts(ctx, a.JobID)
	if err != nil {
		return strategy.ProgressState{}, fmt.Errorf("read attempts: %w", err)
	}
	var before []strategy.AttemptProgress
	for _, b := range all {
		if b.TaskIdx != a.TaskIdx || b.Attempt >= a.Attempt {
			continue
		}
		ap := strategy.AttemptProgress{Attempt: b.Attempt, Progress: b.Progress, Checkpoint: b.Checkpoint, Started: b.StartedAt}
		switch strategy.Action(b.Action) {
		case strategy.Recover, strategy.Restart, strategy.Escalate:
			ap.Restarted = true
		}
		before = append(before, ap)
	}
	return strategy.ProgressOf(before), nil
}
