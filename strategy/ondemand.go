package strategy

import (
	"fmt"
	"time"
)

// LostCost is what a task's preempted spot attempts cost, and what
// on-demand would have cost instead, in dollars.
type LostCost struct {
	// Spent is the cost of every preempted spot attempt of the task, the
	// one that just ended included, at the spot prices they ran at.
	Spent float64
	// Longest is the longest of those attempts' billed times, and OnDemand
	// what one on-demand run of that length (same nodes, same region and
	// instance type) would have cost: the work lost to the preemptions
	// would have been done by then, had the task run on-demand.
	Longest  time.Duration
	OnDemand float64
	// Estimate says a price in the figures was stale or not known for the
	// whole time.
	Estimate bool
}

// Reason texts of the switch to on-demand.
const (
	reasonOnDemandAfter     = "%s; %d preemptions reach on_demand_after %d: recovering on-demand"
	reasonOnDemandAfterCost = "%s; the spot attempts preempted so far (%d) cost %s, more than on-demand would have for the longest of them (%s, %s): recovering on-demand"
)

// onDemand is rule 1b: d, a decision after a preemption, recovers
// on-demand when the policy says the spot task has been preempted enough,
// by count (OnDemandAfter) or by cost (OnDemandAfterCost). The count wins
// when both would switch. d.Counters.Preemptions counts this preemption when
// the policy switches at all.
func onDemand(p Policy, e Ended, d Decision) Decision {
	if d.Action != Recover || e.OnDemand || (p.OnDemandAfter <= 0 && !p.OnDemandAfterCost) {
		return d
	}
	n := d.Counters.Preemptions + 1
	d.Counters.Preemptions = n
	switch {
	case p.OnDemandAfter > 0 && n >= p.OnDemandAfter:
		d.OnDemand, d.Rule = true, RuleOnDemandAfter
		d.Reason = fmt.Sprintf(reasonOnDemandAfter, d.Reason, n, p.OnDemandAfter)
	case p.OnDemandAfterCost && e.Lost != nil && e.Lost.Spent > e.Lost.OnDemand:
		d.OnDemand, d.Rule = true, RuleOnDemandAfterCost
		d.Reason = fmt.Sprintf(reasonOnDemandAfterCost, d.Reason, n, dollars(e.Lost.Spent, e.Lost.Estimate),
			e.Lost.Longest.Round(time.Second), dollars(e.Lost.OnDemand, e.Lost.Estimate))
	}
	return d
}

// dollars writes an amount as reasons show it: "$1.23", "~$1.23" when it
// is an estimate.
func dollars(v float64, estimate bool) string {
	s := fmt.Sprintf("$%.2f", v)
	if estimate {
		s = "~" + s
	}
	return s
}
