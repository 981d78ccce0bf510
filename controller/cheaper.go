package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	"sortie/controller/store"
	"sortie/provision/price"
	"sortie/schema"
	"sortie/strategy"
)

// placeCheaper orders the candidates as resources.placement asks before the
// strategy applies: by price from the Book for "cheapest", as they come
// otherwise.
func (c *Controller) placeCheaper(task *schema.Task, cands []strategy.Candidate, now time.Time) []strategy.Candidate {
	if task.Resources.PlacementOrder != schema.PlaceCheapest {
		return cands
	}
	return strategy.Cheapest(cands, c.priceOf(now))
}

// priceOf prices a candidate per node-hour at now from the Book
// (candidateKey): a spot candidate by its zone's spot price (the Book falls
// back to the region's where the cloud sets spot prices per region), an
// on-demand one by its region's price.
func (c *Controller) priceOf(now time.Time) strategy.PriceOf {
	return func(cand strategy.Candidate) (float64, bool) {
		q, ok := c.priceAt(candidateKey(cand), now)
		return q.PerHour, ok
	}
}

// avoidPreempted orders the spot candidates in zones that preempted
// recently last (config.yaml preemptions:), from the history every replica
// reads from the store. A store that cannot say leaves the order as it
// is: the history is advice, not a reason to stop launching.
func (c *Controller) avoidPreempted(ctx context.Context, cands []strategy.Candidate) []strategy.Candidate {
	halfLife := c.Config.PreemptionHalfLife()
	spot := slices.ContainsFunc(cands, func(c strategy.Candidate) bool { return c.Resources.UseSpot })
	if halfLife <= 0 || !spot {
		return cands
	}
	now := c.Now()
	ps, err := c.Store.Preemptions(ctx, now.Add(-strategy.PreemptionWindow(halfLife)))
	if err != nil {
		c.Log.Warn("read the recent preemptions; launching in the strategy's order", "err", err)
		return cands
	}
	return strategy.AvoidPreempted(cands, strategy.PreemptionWeights(ps, now, halfLife))
}

// usesSpot reports whether r asks for spot anywhere: itself or a candidate.
func usesSpot(r schema.Resources) bool {
	if r.UseSpot {
		return true
	}
	return slices.ContainsFunc(r.AnyOf, func(c schema.Resources) bool { return c.UseSpot }) ||
		slices.ContainsFunc(r.Ordered, func(c schema.Resources) bool { return c.UseSpot })
}

// onDemandFacts fills in what job_recovery.on_demand_after and
// on_demand_after_cost decide on, for a preempted attempt a ending at end:
// whether a ran on-demand, the task's spot preemptions before it, and
// what they cost (nil when a price is not known). It reads the attempts
// only when the policy switches at all.
func (c *Controller) onDemandFacts(ctx context.Context, p strategy.Policy, task *schema.Task, a *store.Attempt, end time.Time,
	counters *strategy.Counters, ended *strategy.Ended) error {
	ended.OnDemand = a.OnDemand || !usesSpot(task.Resources)
	if a.Billing.From != nil {
		ended.OnDemand = !a.Billing.Spot // what the launch that succeeded asked for
	}
	if ended.Outcome != strategy.Preempted || ended.OnDemand || (p.OnDemandAfter <= 0 && !p.OnDemandAfterCost) {
		return nil
	}
	all, err := c.Store.Attempts(ctx, a.JobID)
	if err != nil {
		return fmt.Errorf("read attempts: %w", err)
	}
	var preempted []*store.Attempt
	for _, b := range all {
		if b.TaskIdx == a.TaskIdx && b.ID != a.ID && b.Outcome == string(strategy.Preempted) && !b.OnDemand && b.EndedAt != nil {
			preempted = append(preempted, b)
		}
	}
	counters.Preemptions = len(preempted)
	if p.OnDemandAfterCost {
		ended.Lost = c.lostCost(append(preempted, a), end)
	}
	return nil
}

// lostCost is what the preempted spot attempts as cost (as stored when
// each ended; the last, still ending at end, priced now), and what one
// on-demand run as long as the longest of them would have cost at the
// on-demand price of its region at end. nil when a price is not known.
func (c *Controller) lostCost(as []*store.Attempt, end time.Time) *strategy.LostCost {
	var spent price.Amount
	var longest time.Duration
	var at *store.Attempt
	for i, b := range as {
		cost := b.Cost
		if i == len(as)-1 {
			cost = c.attemptCost(b, end)
		}
		if cost == nil || b.Billing.From == nil {
			return nil
		}
		spent = spent.Add(price.Amount{Dollars: cost.Dollars, Estimate: cost.Estimate})
		stop := end
		if b.EndedAt != nil && i < len(as)-1 {
			stop = *b.EndedAt
		}
		if d := max(stop.Sub(*b.Billing.From), b.Billing.Minimum); at == nil || d > longest {
			at, longest = b, d
		}
	}
	if at == nil {
		return nil
	}
	key := billingKey(at)
	key.Zone, key.Spot = "", false
	q, ok := c.priceAt(key, end)
	if !ok {
		return nil
	}
	return &strategy.LostCost{Spent: spent.Dollars, Longest: longest, OnDemand: q.PerHour * float64(max(at.Billing.Nodes, 1)) * longest.Hours(),
		Estimate: spent.Estimate || q.Stale}
}
