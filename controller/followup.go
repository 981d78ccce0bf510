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
// ticks, so that no goroutine waits long. Only a running loop (Run) follows
// up: a test driving Tick by hand sees one step per tick, and never waits.

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

// reconcileOn reconciles j, then goes on with it for as long as each step
// asks to continue within a poll interval.
func (c *Controller) reconcileOn(ctx context.Context, j *store.Job, a *store.Attempt, snap snapshot) error {
	err := c.reconcile(ctx, j, a, snap)
	for err == nil {
		at, ok := c.takeContinue(j.ID)
		if !ok {
			return nil
		}
		if wait := at.Sub(c.Now()); wait > 0 {
			if wait > c.Config.Controller.PollInterval.D() {
				return nil
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		if j, err = c.Store.Job(ctx, j.ID); err != nil {
			return err
		}
		if store.IsTerminal(j.Status) {
			return nil
		}
		// The step that asked to continue ended the job's attempt, and this
		// goroutine holds the job: there is no open attempt.
		err = c.reconcile(ctx, j, nil, snapshot{})
	}
	return err
}
