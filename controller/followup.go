package controller

import (
	"context"
	"fmt"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
)

// A job whose attempt has just ended with a restart, a recovery or a move to
// the next task of its pipeline goes on when its back-off ends (endAttempt
// asks the schedule to continue at that time), still claimed by the step
// that ended the attempt, instead of at the next tick. The time from seeing
// an attempt end to asking for the next one is then the back-off the
// strategy chose plus the controller's own work, not up to a whole poll
// interval more. A back-off longer than a poll interval is left to the
// ticks, so that no goroutine waits long.
//
// The follow-up goes on with step. Only a running loop (Run) follows up: a
// test driving Tick by hand sees one step per tick, and never waits.

// step goes on with job id between ticks: it reads the job afresh and
// moves it a step, and says false once the job has ended.
func (c *jobStep) step(ctx context.Context, id int64) (bool, error) {
	j, err := c.Store.Job(ctx, id)
	if err != nil {
		return false, fmt.Errorf("read job: %w", err)
	}
	if j.Status.Terminal() {
		return false, nil
	}
	a, err := c.openAttempt(ctx, j)
	if err != nil {
		return false, fmt.Errorf("read the open attempt: %w", err)
	}
	var snap snapshot
	if a != nil && a.State == lifecycle.AttemptRunning {
		snap = c.snapshot(ctx, []*store.Attempt{a})
	}
	return true, c.reconcile(ctx, j, a, snap)
}

// openAttempt is the attempt of j's current task that has not ended, or nil.
func (c *Controller) openAttempt(ctx context.Context, j *store.Job) (*store.Attempt, error) {
	a, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil || a == nil || a.State == lifecycle.AttemptEnded || isReplaced(a) {
		return nil, err
	}
	return a, nil
}
