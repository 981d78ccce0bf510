package controller

import (
	"context"
	"fmt"

	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// confirm applies job_recovery.confirm_failures to d, what strategy.Decide
// made of e, the end of attempt a of task: strategy.Confirm, given the
// failure a confirmation of the task is about, if one runs, and where a
// new one would run first.
func (c *jobStep) confirm(ctx context.Context, task *schema.Task, a *store.Attempt, counters strategy.Counters, e strategy.Ended, d strategy.Decision) (strategy.Confirmed, error) {
	cp := strategy.ConfirmPolicyFrom(task.Recovery())
	if cp.Runs == 0 {
		return strategy.Confirmed{Decision: d}, nil
	}
	pending, err := c.Store.PendingConfirmation(ctx, a.JobID, a.TaskIdx)
	if err != nil {
		return strategy.Confirmed{}, fmt.Errorf("read the pending confirmation: %w", err)
	}
	var next *schema.Placement
	if pending == nil && (e.Outcome == strategy.UserFailure || e.Outcome == strategy.SetupFailure) {
		next = c.confirmPlacement(ctx, task, a)
	}
	return strategy.Confirm(cp, counters, e, a.Attempt, d, pending, next, c.Now()), nil
}

// confirmPlacement is where a run confirming a's failure goes first: the
// first of the task's candidates strategy.ConfirmOrder gives, nil when
// the clouds cannot say (the launch then finds out).
func (c *Controller) confirmPlacement(ctx context.Context, task *schema.Task, a *store.Attempt) *schema.Placement {
	cands, err := strategy.Candidates(attemptResources(task, a), func(r schema.Resources) ([]schema.Placement, error) {
		prov, err := c.Providers.Provider(ctx, r.Cloud)
		if err != nil {
			return nil, err
		}
		return prov.Placements(ctx, r)
	})
	if err != nil || len(cands) == 0 {
		return nil
	}
	pl := strategy.ConfirmOrder(cands, attemptPlacement(a))[0].Placement
	return &pl
}

// confirmOrder is the launch order of attempt a of task: the one
// strategy.Order gave, unless a is a run confirming a failure, which goes
// to another placement first (strategy.ConfirmOrder).
func (c *Controller) confirmOrder(ctx context.Context, task *schema.Task, a *store.Attempt, cands, order []strategy.Candidate) ([]strategy.Candidate, error) {
	if task.Recovery().ConfirmFailures == 0 {
		return order, nil
	}
	pending, err := c.Store.PendingConfirmation(ctx, a.JobID, a.TaskIdx)
	if err != nil {
		return nil, fmt.Errorf("read the pending confirmation: %w", err)
	}
	if pending == nil {
		return order, nil
	}
	return strategy.ConfirmOrder(cands, pending.Placement), nil
}
