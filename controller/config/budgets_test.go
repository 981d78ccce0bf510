package config

import (
	"strings"
	"testing"
)

func TestBudgetsSection(t *testing.T) {
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Budgets.Monthly != nil || cfg.Budgets.WhenSpent != WhenSpentFinish {
		t.Errorf("left out: %+v, want no budget, finish", cfg.Budgets)
	}
	cfg, err = load(t, "budgets:\n  monthly: 500\n  when_spent: stop\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Budgets.Monthly == nil || *cfg.Budgets.Monthly != 500 || cfg.Budgets.WhenSpent != WhenSpentStop {
		t.Errorf("set: %+v, want 500, stop", cfg.Budgets)
	}
	cfg, err = load(t, "budgets:\n  monthly: 0\n", nil)
	if err != nil || cfg.Budgets.Monthly == nil || *cfg.Budgets.Monthly != 0 {
		t.Errorf("monthly 0: %+v %v, want a budget of 0", cfg.Budgets, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"budgets:\n  monthly: -5\n", "line 2: budgets.monthly: -5 is negative; give the dollars each user may spend a month (0 or more), or leave it out for no budget"},
		{"budgets:\n  when_spent: kill\n", `line 2: budgets.when_spent: "kill" is not what to do with running jobs; use finish (they finish) or stop (they are stopped)`},
		{"budgets:\n  monthly: lots\n", "budgets.monthly"},
	} {
		_, err := load(t, tc.yaml, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to say %q", tc.yaml, err, tc.want)
		}
	}
}
