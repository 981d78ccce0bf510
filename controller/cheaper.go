package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// priceOf prices a candidate per node-hour at now from the Book (priceAt:
// the zone's price, else the region's).
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
		cur := *a
		cur.EndedAt = &end
		ended.Lost = c.lostCost(task, append(preempted, &cur), end)
	}
	return nil
}

// lostCost is what the preempted spot attempts as cost, at the spot prices
// of the Book over the time each ran, and what one on-demand run as long
// as the longest of them would have cost at now's on-demand price in its
// region. nil when a price is not known.
func (c *Controller) lostCost(task *schema.Task, as []*store.Attempt, now time.Time) *strategy.LostCost {
	if c.Prices == nil {
		return nil
	}
	nodes := max(task.NumNodes, 1)
	var spent price.Amount
	var longest *store.Attempt
	for _, b := range as {
		r := attemptResources(task, b)
		key := price.Key{Cloud: strings.ToLower(b.Cloud), Region: b.Region, Zone: b.Zone, InstanceType: r.InstanceType, Spot: true}
		h := c.history(key, b.StartedAt, *b.EndedAt)
		if len(h) == 0 {
			return nil
		}
		spent = spent.Add(price.Cost(h, nodes, b.StartedAt, *b.EndedAt, billingMinimum(b.Cloud)))
		if longest == nil || b.EndedAt.Sub(b.StartedAt) > longest.EndedAt.Sub(longest.StartedAt) {
			longest = b
		}
	}
	if longest == nil {
		return nil
	}
	r := attemptResources(task, longest)
	q, ok := c.priceAt(price.Key{Cloud: strings.ToLower(longest.Cloud), Region: longest.Region, InstanceType: r.InstanceType}, now)
	if !ok {
		return nil
	}
	billed := max(longest.EndedAt.Sub(longest.StartedAt), billingMinimum(longest.Cloud))
	return &strategy.LostCost{Spent: spent.Dollars, Longest: billed, OnDemand: q.PerHour * float64(nodes) * billed.Hours(),
		Estimate: spent.Estimate || q.Stale}
}
