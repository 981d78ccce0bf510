package controller

import (
	"context"
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
			Weights: c.Config.FairShare.Weights, Used: f.Used, HalfLife: halfLife})
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
