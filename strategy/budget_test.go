package strategy

import (
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/schema"
)

func TestOverBudget(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		max        float64
		spend      Spend
		now        time.Time
		wantReason string
	}{
		{"no max_cost is never over", 0, Spend{Ended: 1e6}, t0, ""},
		{"no price known is never over", 40, Spend{}, t0, ""},
		{"ended attempts under the budget", 40, Spend{Ended: 39.99}, t0, ""},
		{"ended attempts past it", 40, Spend{Ended: 40.02}, t0, "spent $40.02 of max_cost $40"},
		{"exactly the budget is spent", 40, Spend{Ended: 40}, t0, "spent $40.00 of max_cost $40"},
		{"a running attempt crosses it as time passes", 40,
			Spend{Ended: 30, Running: 5, At: t0, PerHour: 10}, t0.Add(29 * time.Minute), ""},
		{"a running attempt crossed it", 40,
			Spend{Ended: 30, Running: 5, At: t0, PerHour: 10}, t0.Add(30*time.Minute + 72*time.Second), "spent $40.20 of max_cost $40"},
		{"a clock behind At counts what was accrued", 40,
			Spend{Ended: 30, Running: 5, At: t0, PerHour: 10}, t0.Add(-time.Hour), ""},
		{"the next attempt fits an hour", 40, Spend{Ended: 30, Next: 9.5}, t0, ""},
		{"the next attempt would not run an hour", 40, Spend{Ended: 30, Next: 10.5}, t0,
			"spent $30.00 of max_cost $40; the next attempt would cost $10.50/h, more than the $10.00 left"},
		{"a fractional budget is shown as written", 2.5, Spend{Ended: 2.51}, t0, "spent $2.51 of max_cost $2.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, over := OverBudget(Policy{MaxCost: tt.max}, tt.spend, tt.now)
			if reason != tt.wantReason || over != (tt.wantReason != "") {
				t.Errorf("OverBudget = %q, %v; want %q", reason, over, tt.wantReason)
			}
		})
	}
}

func TestDecideOverBudget(t *testing.T) {
	reason := "spent $40.02 of max_cost $40"
	d := Decide(Policy{MaxCost: 40, MaxRestartsOnErrors: 3}, Counters{RecoveryCount: 2},
		Ended{Outcome: BudgetSpent, Detail: reason, Placement: schema.Placement{Cloud: "aws"}}, false)
	if d.Action != Fail || d.Status != lifecycle.Failed || d.Rule != RuleMaxCost || d.Reason != reason || d.Counters.RecoveryCount != 2 {
		t.Errorf("Decide(over_budget) = %+v", d)
	}
}

func TestPolicyFromMaxCost(t *testing.T) {
	if got := PolicyFrom(schema.JobRecovery{MaxCost: 40}).MaxCost; got != 40 {
		t.Errorf("PolicyFrom(max_cost 40).MaxCost = %v", got)
	}
}

func TestOverHourlyCost(t *testing.T) {
	capped := schema.Resources{MaxHourlyCost: 0.2}
	tests := []struct {
		name       string
		r          schema.Resources
		price      float64
		known      bool
		wantReason string
	}{
		{"no limit", schema.Resources{}, 99, true, ""},
		{"under the limit", capped, 0.19, true, ""},
		{"at the limit", capped, 0.2, true, ""},
		{"above it", capped, 0.2051, true, "$0.21/h per node is above max_hourly_cost $0.2"},
		{"no price known is tried", capped, 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, over := OverHourlyCost(tt.r, tt.price, tt.known)
			if reason != tt.wantReason || over != (tt.wantReason != "") {
				t.Errorf("OverHourlyCost = %q, %v; want %q", reason, over, tt.wantReason)
			}
		})
	}
}
