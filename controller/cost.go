package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision/price"
	"sortie/schema"
	"sortie/strategy"
)

// What a job costs (cost.go): the controller prices each attempt from
// Controller.Prices, a book of prices read before, never a call to a cloud.
// When an attempt's launch is requested it records how the attempt will be
// billed (SetPlacement); when the attempt ends, what it cost goes into the
// transaction that ends it, so a listing only adds stored sums. Nil Prices
// is no price known: every cost is unknown.

// billingMinimum is the shortest time a cloud bills an instance for, as
// the registry says.
func billingMinimum(cloud string) time.Duration {
	return clouds.Lookup(strings.ToLower(cloud)).BillingMinimum
}

// history is the prices of k in effect during [from, to] (the book
// falls back from a zone's price to its region's, then to the cloud's).
func (c *Controller) history(k price.Key, from, to time.Time) []price.Quote {
	if c.Prices == nil {
		return nil
	}
	return c.Prices.History(k, from, to)
}

// priceAt is the price of one node of k at t; false when none is known.
func (c *Controller) priceAt(k price.Key, t time.Time) (price.Quote, bool) {
	h := c.history(k, t, t)
	if len(h) == 0 {
		return price.Quote{}, false
	}
	return h[len(h)-1], true
}

// candidateKey names the price of one node at a candidate placement
// (price.KeyOf).
func candidateKey(cand strategy.Candidate) price.Key {
	return price.KeyOf(cand.Placement, cand.Resources)
}

// billingKey names the price an attempt is billed at, as candidateKey.
func billingKey(a *store.Attempt) price.Key {
	k := price.Key{Cloud: a.Cloud, Region: a.Region, InstanceType: a.Billing.InstanceType, Spot: a.Billing.Spot}
	if k.Spot {
		k.Zone = a.Zone
	}
	return k
}

// billing is how a cluster of nodes launched now at cand is billed.
func (c *Controller) billing(cand strategy.Candidate, nodes int) store.Billing {
	now := c.Now()
	k := candidateKey(cand)
	b := store.Billing{From: &now, InstanceType: k.InstanceType, Spot: k.Spot,
		Nodes: nodes, Minimum: billingMinimum(cand.Placement.Cloud)}
	if q, ok := c.priceAt(k, now); ok {
		b.PerHour = &q.PerHour
	}
	return b
}

// attemptCost is what a's cluster cost from its billing's start to end:
// every node at the prices in effect meanwhile, with the cloud's minimum.
// An attempt that never had instances cost nothing. It is nil when no
// price is known (no book, no price of the attempt's instance type there).
func (c *Controller) attemptCost(a *store.Attempt, end time.Time) *store.Cost {
	if c.Prices == nil {
		return nil
	}
	if len(a.InstanceIDs) == 0 {
		return &store.Cost{}
	}
	from := a.Billing.From
	if from == nil {
		return nil
	}
	h := c.history(billingKey(a), *from, end)
	if len(h) == 0 {
		return nil
	}
	am := price.Cost(h, max(a.Billing.Nodes, 1), *from, end, a.Billing.Minimum)
	return &store.Cost{Dollars: am.Dollars, Estimate: am.Estimate}
}

// countCost adds an ended attempt's cost to sortie_cost_dollars_total.
func (c *Controller) countCost(j *store.Job, a *store.Attempt, cost *store.Cost) {
	if cost != nil && cost.Dollars > 0 {
		c.Metrics.CostDollars.WithLabelValues(j.Owner, a.Cloud).Add(cost.Dollars)
	}
}

// budgets holds each job's max_cost per task, read from its spec once;
// dropped when the job ends.
type budgets struct{ m sync.Map }

// maxCost is the max_cost of j's current task; zero for none.
func (c *Controller) maxCost(j *store.Job) float64 {
	v, ok := c.budgets.m.Load(j.ID)
	if !ok {
		p, err := c.spec(j)
		if err != nil {
			return 0 // the step that needs the spec ends the job with this error
		}
		limits := make([]float64, len(p.Tasks))
		for i, t := range p.Tasks {
			limits[i] = strategy.PolicyFrom(t.Recovery()).MaxCost
		}
		v, _ = c.budgets.m.LoadOrStore(j.ID, limits)
	}
	limits := v.([]float64)
	if j.CurrentTask >= len(limits) {
		return 0
	}
	return limits[j.CurrentTask]
}

// spend is what j has cost at now: its ended attempts (stored) and a, its
// open attempt, priced from the book up to now.
func (c *Controller) spend(j *store.Job, a *store.Attempt, now time.Time) strategy.Spend {
	var s strategy.Spend
	if j.Cost != nil {
		s.Ended = *j.Cost
	}
	s.At = now
	if a != nil && a.State != lifecycle.AttemptEnded {
		if cost := c.attemptCost(a, now); cost != nil {
			s.Running = cost.Dollars
		}
	}
	return s
}

// overBudget applies strategy.OverBudget to j and its open attempt a.
func (c *Controller) overBudget(j *store.Job, a *store.Attempt) (string, bool) {
	limit := c.maxCost(j)
	if limit <= 0 || c.Prices == nil {
		return "", false
	}
	now := c.Now()
	return strategy.OverBudget(strategy.Policy{MaxCost: limit}, c.spend(j, a, now), now)
}

// overBudgetAt says whether launching a's cluster at cand would start an
// attempt that the job's max_cost cannot pay an hour of, at perHour a node.
func (c *Controller) overBudgetAt(j *store.Job, task *schema.Task, a *store.Attempt, perHour float64) (string, bool) {
	limit := strategy.PolicyFrom(task.Recovery()).MaxCost
	if limit <= 0 {
		return "", false
	}
	now := c.Now()
	s := c.spend(j, a, now)
	s.Next = perHour * float64(max(task.NumNodes, 1))
	return strategy.OverBudget(strategy.Policy{MaxCost: limit}, s, now)
}

// overBudgetOn says whether a restart on last's cluster, kept for it,
// would start an attempt that the job's max_cost cannot pay an hour of, at
// the cluster's price now (its price at launch when none is known now).
func (c *Controller) overBudgetOn(j *store.Job, last *store.Attempt) (string, bool) {
	limit := c.maxCost(j)
	if limit <= 0 || c.Prices == nil {
		return "", false
	}
	now := c.Now()
	var perHour float64
	if q, ok := c.priceAt(billingKey(last), now); ok {
		perHour = q.PerHour
	} else if last.Billing.PerHour != nil {
		perHour = *last.Billing.PerHour
	}
	s := c.spend(j, nil, now)
	s.Next = perHour * float64(max(last.Billing.Nodes, 1))
	return strategy.OverBudget(strategy.Policy{MaxCost: limit}, s, now)
}

// overBudgetError is nextAttempt's answer when the attempt it would start
// is over the job's max_cost: the job ends with reason.
type overBudgetError struct{ reason string }

func (e *overBudgetError) Error() string { return e.reason }

// stopOverBudget ends a job whose max_cost is spent, as a cancel does: the
// running attempt's nodes are told to stop (SIGTERM, then SIGKILL after
// the termination grace) and their logs kept, then the end is recorded
// (FAILED, with reason) and the cluster torn down; a job between
// attempts ends at once.
func (c *jobStep) stopOverBudget(ctx context.Context, j *store.Job, a *store.Attempt, reason string) error {
	e := ended{outcome: strategy.BudgetSpent, reason: reason, detail: reason}
	if a == nil {
		return c.finishJob(ctx, j, e)
	}
	return c.stopAttempt(ctx, j, a, e)
}
