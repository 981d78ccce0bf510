package store

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

func TestBudgets(t *testing.T) { onEach(t, testBudgets) }

// A user's own budget is set, set to none, and cleared; a user that does
// not exist has none.
func testBudgets(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	if err := s.AddUser(ctx, "alice", "h1", false); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.UserBudget(ctx, "alice"); ok || err != nil {
		t.Fatalf("budget before any: %v %v, want none", ok, err)
	}
	five := 500.0
	if err := s.SetBudget(ctx, "alice", &five, "root"); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.UserBudget(ctx, "alice")
	if err != nil || !ok || got.Monthly == nil || *got.Monthly != 500 || got.SetBy != "root" {
		t.Fatalf("budget: %+v %v %v, want 500 set by root", got, ok, err)
	}
	if err := s.SetBudget(ctx, "alice", nil, "root"); err != nil {
		t.Fatal(err)
	}
	if all, err := s.Budgets(ctx); err != nil || len(all) != 1 || all["alice"].Monthly != nil {
		t.Fatalf("budgets after none: %+v %v, want alice with no budget", all, err)
	}
	if err := s.ClearBudget(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.UserBudget(ctx, "alice"); ok {
		t.Fatal("a cleared budget is still there")
	}
	if err := s.SetBudget(ctx, "bob", &five, "root"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("budget of no user: %v, want ErrNotFound", err)
	}
}

func TestSpent(t *testing.T) { onEach(t, testSpent) }

// What an owner spent since a time: the stored costs of their attempts
// that ended since then, plus their running attempts at their jobs' rates.
func testSpent(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	run := func(owner string, cost *Cost, end bool) {
		t.Helper()
		id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte(`{}`), Owner: owner}, []NewTask{{Name: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
		if err != nil {
			t.Fatal(err)
		}
		from := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
		rate := 2.0
		if err := s.SetPlacement(ctx, a.ID, "", "", "", "", Billing{From: &from, Nodes: 1, PerHour: &rate}); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkLaunched(ctx, a.ID, "aws", "r", "z", []string{"i-1"}); err != nil {
			t.Fatal(err)
		}
		if !end {
			return
		}
		if err := s.MarkRunning(ctx, a); err != nil {
			t.Fatal(err)
		}
		d := strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Rule: strategy.RuleJobSucceeded, Reason: "succeeded"}
		if err := s.EndAttempt(ctx, a, Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}, Cost: cost}, d, Facts{}); err != nil {
			t.Fatal(err)
		}
	}
	run("alice", &Cost{Dollars: 3.5}, true)
	run("alice", &Cost{Dollars: 1.25, Estimate: true}, true)
	run("bob", &Cost{Dollars: 7}, true)
	run("carol", nil, true) // no price known
	run("dave", nil, false) // running since 00:00 at $2 an hour

	now := time.Date(2026, 1, 2, 6, 0, 0, 0, time.UTC)
	month := MonthStart(now)
	if !month.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("MonthStart %v", month)
	}
	all, err := s.Spent(ctx, "", month, now)
	if err != nil {
		t.Fatal(err)
	}
	near := func(c Cost, dollars float64, estimate bool) bool {
		return math.Abs(c.Dollars-dollars) < 1e-9 && c.Estimate == estimate
	}
	if !near(all["alice"], 4.75, true) || !near(all["bob"], 7, false) || !near(all["carol"], 0, true) || !near(all["dave"], 12, true) {
		t.Fatalf("spent by owner: %+v", all)
	}
	one, err := s.Spent(ctx, "bob", month, now)
	if err != nil || len(one) != 1 || !near(one["bob"], 7, false) {
		t.Fatalf("bob's: %+v %v", one, err)
	}
	// Since a time after every end: only the running attempt, from then.
	later, err := s.Spent(ctx, "", time.Date(2026, 1, 2, 5, 0, 0, 0, time.UTC), now)
	if err != nil || len(later) != 1 || !near(later["dave"], 2, true) {
		t.Fatalf("since 05:00: %+v %v, want only dave's last hour", later, err)
	}
}
