package config

import (
	"fmt"

	"sortie/schema"
)

// BudgetsConfig is the budgets: section: what each user of a server may
// spend in a calendar month (UTC), by default. `sortie server users budget
// NAME DOLLARS` sets one user's own.
type BudgetsConfig struct {
	// Monthly is every user's budget in dollars when they have none of
	// their own; nil is no budget.
	Monthly *float64 `json:"monthly"`
	// WhenSpent is what happens to a user's running jobs once their
	// budget is spent: WhenSpentFinish (the default) lets them finish,
	// WhenSpentStop stops them as max_cost does. A launch is refused
	// either way.
	WhenSpent string `json:"when_spent"`
}

// The values of budgets.when_spent.
const (
	WhenSpentFinish = "finish"
	WhenSpentStop   = "stop"
)

// budgetProblems checks the budgets: section.
func (cfg *Config) budgetProblems(lines map[string]int) []schema.Problem {
	var out []schema.Problem
	if m := cfg.Budgets.Monthly; m != nil && *m < 0 {
		out = append(out, schema.Problem{Path: "budgets.monthly", Line: lines["budgets.monthly"],
			Message: fmt.Sprintf("%v is negative; give the dollars each user may spend a month (0 or more), or leave it out for no budget", *m)})
	}
	switch cfg.Budgets.WhenSpent {
	case "":
		cfg.Budgets.WhenSpent = WhenSpentFinish
	case WhenSpentFinish, WhenSpentStop:
	default:
		out = append(out, schema.Problem{Path: "budgets.when_spent", Line: lines["budgets.when_spent"],
			Message: fmt.Sprintf("%q is not what to do with running jobs; use finish (they finish) or stop (they are stopped)", cfg.Budgets.WhenSpent)})
	}
	return out
}
