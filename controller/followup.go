package controller

import (
	"context"
	"time"

	"sortie/controller/store"
)

// A job whose attempt has just ended with a restart, a recovery or a move to
// the next task of its pipeline goes on when its back-off ends, in the
// goroutine that ended the attempt, instead of at the next tick. The time
// from seeing an attempt end to asking for the next one is then the back-off
// the strategy chose plus the controller's own work, not up to a whole poll
// interval more. A back-off longer than a poll interval is left to the
// ticks, so that no goroutine waits long.
//
// A job whose attempt has just started is checked again after each of
// firstChecks, before its shard's next tick: a task that ends at once (a
// typo, a quick step) is seen in a fraction of a second instead of up to a
// poll interval later. Each check asks the provider about that one cluster;
// launches are bounded by max_parallel_launches, and so are these.
//
// Only a running loop (Run) follows up: a test driving Tick by hand sees one
// step per tick, and never waits.

// firstChecks are the waits before each early check of a new attempt.
var firstChecks = [...]time.Duration{200 * time.Millisecond, time.Second}

// continueAt asks the reconcile of job id to go on at t.
func (c *Controller) continueAt(id int64, t time.Time) {
	if !c.following.Load() {
		return
	}
	c.mu.Lock()
	c.cont[id] = t
	c.mu.Unlock()
}

func (c *Controller) takeContinue(id int64) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.cont[id]
	delete(c.cont, id)
	return t, ok
}

func (c *Controller) continues(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.cont[id]
	return ok
}

// reconcileOn reconciles j, then goes on with it for as long as each step
// asks to continue within a poll interval, and checks a new attempt early.
func (c *Controller) reconcileOn(ctx context.Context, j *store.Job, a *store.Attempt, snap snapshot) error {
	// fresh: the step may start an attempt, which then gets early checks.
	fresh := a == nil || a.State != store.AttemptRunning
	if err := c.reconcile(ctx, j, a, snap); err != nil {
		return err
	}
	return c.followUp(ctx, j, fresh)
}

// followUp goes on with j after a step of its reconcile: at the time a step
// asked to continue at, and for a fresh attempt at each of firstChecks.
func (c *Controller) followUp(ctx context.Context, j *store.Job, fresh bool) error {
	checks := 0
	var err error
	for err == nil {
		at, ok := c.takeContinue(j.ID)
		switch {
		case ok:
			fresh, checks = true, 0
		case fresh && checks < len(firstChecks) && c.following.Load():
			at = c.Now().Add(firstChecks[checks])
			checks++
		default:
			return nil
		}
		if wait := at.Sub(c.Now()); wait > 0 {
			if wait > c.Config.Controller.PollInterval.D() {
				return nil
			}
			if !c.wait(ctx, wait) {
				return nil
			}
		}
		if j, err = c.Store.Job(ctx, j.ID); err != nil {
			return err
		}
		if store.IsTerminal(j.Status) {
			return nil
		}
		var a *store.Attempt
		if a, err = c.openAttempt(ctx, j); err != nil {
			return err
		}
		var snap snapshot
		if a != nil && a.State == store.AttemptRunning {
			snap = c.snapshot(ctx, []*store.Attempt{a})
		}
		err = c.reconcile(ctx, j, a, snap)
	}
	return err
}

// openAttempt is the attempt of j's current task that has not ended, or nil.
func (c *Controller) openAttempt(ctx context.Context, j *store.Job) (*store.Attempt, error) {
	a, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil || a == nil || a.State == store.AttemptEnded {
		return nil, err
	}
	return a, nil
}

// wait waits d, or until ctx ends (false).
func (c *Controller) wait(ctx context.Context, d time.Duration) bool {
	if c.sleep != nil {
		return c.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
