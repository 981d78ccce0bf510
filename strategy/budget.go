package strategy

import (
	"fmt"

	"sortie/schema"
	"strconv"
	"time"
)

// Spend is what a job has cost, as the controller counts it from the
// prices it knows, and what its next attempt would cost per hour.
type Spend struct {
	// Ended is what the job's ended attempts cost, in dollars.
	Ended float64
	// Running is what the running attempt's cluster cost up to At, and
	// PerHour what it costs per hour (every node) after At; both zero when
	// no cluster of the job is up.
	Running float64
	At      time.Time
	PerHour float64
	// Next is the expected hourly cost (every node) of the placement the
	// next attempt is about to launch at; zero when no attempt is about to
	// launch, or its price is not known.
	Next float64
}

// Spent is what the job has cost at now.
func (s Spend) Spent(now time.Time) float64 {
	d := s.Ended + s.Running
	if s.PerHour > 0 && now.After(s.At) {
		d += s.PerHour * now.Sub(s.At).Hours()
	}
	return d
}

// Money formats dollars as sortie shows them: "$40.02".
func Money(dollars float64) string { return fmt.Sprintf("$%.2f", dollars) }

// budget formats a limit as the user wrote it: "$40", "$2.5".
func budget(dollars float64) string { return "$" + strconv.FormatFloat(dollars, 'f', -1, 64) }

// OverBudget is the max_cost rule: a job is over its budget at now once
// what it spent reaches MaxCost, whatever it is doing (running, backing
// off), and before an attempt is launched when what is left of MaxCost is
// less than an hour of the placement it would launch at (Spend.Next): an
// attempt that could not run an hour is not started. The reason is what
// the job ends with: "spent $40.02 of max_cost $40". With no MaxCost, or
// no price known (a Spend of zeros), it is never over.
func OverBudget(p Policy, s Spend, now time.Time) (reason string, over bool) {
	if p.MaxCost <= 0 {
		return "", false
	}
	spent := s.Spent(now)
	if spent >= p.MaxCost {
		return fmt.Sprintf("spent %s of max_cost %s", Money(spent), budget(p.MaxCost)), true
	}
	if left := p.MaxCost - spent; s.Next > 0 && left < s.Next {
		return fmt.Sprintf("spent %s of max_cost %s; the next attempt would cost %s/h, more than the %s left",
			Money(spent), budget(p.MaxCost), Money(s.Next), Money(left)), true
	}
	return "", false
}

// OverHourlyCost is the max_hourly_cost rule: a candidate whose node costs
// perHour dollars an hour is skipped when that is above the candidate's
// max_hourly_cost (SkyPilot's field: the price of one node). A price not
// known (known false) is not skipped: no limit can be checked. The reason
// is recorded with the launch tries.
func OverHourlyCost(r schema.Resources, perHour float64, known bool) (reason string, over bool) {
	if r.MaxHourlyCost <= 0 || !known || perHour <= r.MaxHourlyCost {
		return "", false
	}
	return fmt.Sprintf("%s/h per node is above max_hourly_cost %s", Money(perHour), budget(r.MaxHourlyCost)), true
}
