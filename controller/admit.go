package controller

import (
	"cmp"
	"context"
	"errors"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// admit runs one admission pass over the store when config.yaml sets
// limits: the PENDING jobs the limits leave room for, in priority and
// fair-share order (strategy.Admit), are marked admitted; every other
// waiting job gets its place and reason, which the queue shows. Without
// limits it does nothing and every job starts when launched. A pass that
// fails admits nothing: the next tick tries again.
func (c *Controller) admit(ctx context.Context) {
	if !c.Config.Limits.Any() {
		// Without config.yaml's limits, only quotas set through the
		// server (`sortie server quotas`) may limit: a cheap look first.
		any, err := c.Store.HasQuotas(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.Log.Warn("admission: read the quotas", "err", err)
			}
			return
		}
		if !any {
			c.limited.Store(limitsOff)
			return
		}
	}
	start := time.Now()
	now := c.Now()
	halfLife := c.Config.FairShare.HalfLife.D()
	base := c.Config.Limits.Strategy()
	res, err := c.Store.Admit(ctx, now.Add(-strategy.UseWindow(halfLife)), func(f store.AdmissionFacts) []strategy.Placed {
		// The quotas are read in the pass's transaction: a change takes
		// effect at the next pass of every replica.
		limits := store.ApplyQuotas(base, f.Quotas)
		if store.LimitsAny(limits) {
			c.limited.Store(limitsOn)
		} else {
			c.limited.Store(limitsOff)
		}
		return strategy.Admit(strategy.AdmitInput{Now: now, Waiting: f.Waiting, Held: f.Held, Limits: limits,
			Weights: c.Config.FairShare.Weights, Used: f.Used, HalfLife: halfLife,
			Admitted: f.Admitted, Preempt: c.Config.Limits.Preempts()})
	})
	if err != nil {
		if ctx.Err() == nil {
			c.Log.Warn("admission", "err", err)
		}
		return
	}
	if len(res.Admitted) > 0 {
		c.Log.Info("admitted", "jobs", res.Admitted, "waiting", res.Waiting, "took", time.Since(start))
	}
	for victim, by := range res.Preempted {
		c.Log.Info("preempting", "job", victim, "for", by)
		// A launch under way stops now rather than when it ends.
		c.aborts.abort(victim)
	}
}

// yield stops job j, asked to make room for a waiting job of higher
// priority (limits.preemption), the way a cancel stops it: its nodes get
// SIGTERM and the task's termination grace, then SIGKILL; their logs and
// codes are kept, and its attempt ends preempted_by_priority, which
// requeues the job (PENDING, not admitted, counters untouched) and tears
// its cluster down. A job with no attempt open goes back to wait at once.
// The request is in the store until the end is recorded: a controller
// killed in the middle finds it again and goes on with the stop.
func (c *jobStep) yield(ctx context.Context, j *store.Job, a *store.Attempt) error {
	reason := cmp.Or(j.YieldReason, "preempted by priority")
	if a == nil {
		if err := c.Store.Requeue(ctx, j.ID, reason); err != nil {
			if errors.Is(err, store.ErrTerminal) || errors.Is(err, store.ErrOpenAttempt) || errors.Is(err, store.ErrCancelRequested) {
				return nil // moved on since it was read: the next look sees it as it is
			}
			return err
		}
		c.logger(ctx).Info("requeued", "reason", reason)
		// A cluster kept for a restart is not held while the job waits.
		last, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
		if err == nil {
			actx, cancel := afterEnd(ctx)
			defer cancel()
			c.terminate(actx, last)
		}
		return nil
	}
	e := ended{outcome: strategy.PreemptedByPriority, reason: reason, detail: reason}
	return c.stopAttempt(ctx, j, a, e)
}

// What the last admission pass found (Controller.limited).
const (
	limitsOn  = 1
	limitsOff = 2
)

// waitsForAdmission says whether job j waits for admission: it is PENDING,
// not admitted, and limits are set (in config.yaml, or as quotas at the
// last admission pass).
func (c *Controller) waitsForAdmission(j *store.Job) bool {
	if j.Status != lifecycle.Pending || j.AdmittedAt != nil {
		return false
	}
	switch c.limited.Load() {
	case limitsOn:
		return true
	case limitsOff:
		return false
	}
	return c.Config.Limits.Any()
}
