package controller

import (
	"context"
	"sync/atomic"

	"sortie/controller/store"
)

// maxParallelChecks bounds how many running jobs a tick checks at once.
// With one goroutine per job, a tick's thousand checks all ran at once, and
// the few that found an attempt ended, whose decision a user waits for,
// shared the CPU with every other check; with a bounded pool they share it
// with a few. Checks of remote nodes wait on the network, so the bound is
// well above the number of cores.
const maxParallelChecks = 32

type jobAttempt struct {
	j *store.Job
	a *store.Attempt
}

// reconcileJob reconciles a claimed job and follows up on it in its own
// goroutine, then releases it.
func (c *Controller) reconcileJob(ctx context.Context, j *store.Job, a *store.Attempt, snap snapshot) {
	defer c.workers.Done()
	defer c.release(j.ID)
	if err := c.reconcileOn(ctx, j, a, snap); err != nil && ctx.Err() == nil {
		c.Log.Error("reconcile", "job", j.ID, "err", err)
	}
}

// checkRunning checks claimed jobs whose attempt runs, at most
// maxParallelChecks at a time, and returns at once. A job whose check
// ended its attempt goes on in a goroutine of its own, so that a launch
// never holds a checker.
func (c *Controller) checkRunning(ctx context.Context, jas []jobAttempt, snap snapshot) {
	var next atomic.Int64
	for range min(len(jas), maxParallelChecks) {
		go func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(jas) {
					return
				}
				j, a := jas[k].j, jas[k].a
				err := c.reconcile(ctx, j, a, snap)
				if err == nil && c.continues(j.ID) {
					go func() {
						defer c.workers.Done()
						defer c.release(j.ID)
						if err := c.followUp(ctx, j, false); err != nil && ctx.Err() == nil {
							c.Log.Error("reconcile", "job", j.ID, "err", err)
						}
					}()
					continue
				}
				if err != nil && ctx.Err() == nil {
					c.Log.Error("reconcile", "job", j.ID, "err", err)
				}
				c.release(j.ID)
				c.workers.Done()
			}
		}()
	}
}
