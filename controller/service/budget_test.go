package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// spend stores a job of owner whose one attempt ended now costing dollars.
func spend(t *testing.T, st *store.Store, owner string, dollars float64) {
	t.Helper()
	ctx := context.Background()
	id, err := st.CreateJob(ctx, &store.Job{Name: "spent", Spec: []byte(`{}`), Owner: owner}, []store.NewTask{{Name: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.NewAttempt(ctx, id, 0, func(n int) string { return "sortie-spent" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now().Add(-time.Minute)
	if err := st.SetPlacement(ctx, a.ID, "", "", "", "", store.Billing{From: &from, Nodes: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkLaunched(ctx, a.ID, "local", "local", "local-a", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	zero := 0
	d := strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Rule: strategy.RuleJobSucceeded, Reason: "succeeded"}
	if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{&zero}, Cost: &store.Cost{Dollars: dollars}}, d, store.Facts{}); err != nil {
		t.Fatal(err)
	}
}

func TestLaunchRefusedOverBudget(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	s.Now = time.Now
	task := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(task, []byte("run: train\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if err := s.Store.AddUser(ctx, u, "hash-"+u, false); err != nil {
			t.Fatal(err)
		}
	}
	spend(t, s.Store, "alice", 30)
	spend(t, s.Store, "alice", 25)
	as := func(name string) { s.Asker = &contract.Asker{Name: name} }

	// No budget anywhere: alice launches.
	as("alice")
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: task}); err != nil {
		t.Fatalf("without a budget: %v", err)
	}
	// Her own budget of $50, spent ($55): refused, naming the figures.
	fifty := 50.0
	if err := s.Store.SetBudget(ctx, "alice", &fifty, "root"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Launch(ctx, contract.LaunchRequest{File: task})
	var be *contract.BudgetError
	if !errors.As(err, &be) || be.User != "alice" || be.Spent != 55 || be.Budget != 50 || be.Month != time.Now().UTC().Format("2006-01") {
		t.Fatalf("over her budget: %v, want a BudgetError of alice's $55 of $50", err)
	}
	if want := "alice has spent $55.00 of their monthly budget of $50.00"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start %q", err.Error(), want)
	}
	// bob has spent nothing: the default of $10 leaves him room.
	ten := 10.0
	s.Config.Budgets.Monthly = &ten
	as("bob")
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: task}); err != nil {
		t.Fatalf("bob under the default: %v", err)
	}
	// A default of 0 refuses him; alice's own budget of none lets her go.
	zero := 0.0
	s.Config.Budgets.Monthly = &zero
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: task}); !errors.As(err, &be) || be.User != "bob" {
		t.Fatalf("bob at a default of 0: %v, want refused", err)
	}
	if err := s.Store.SetBudget(ctx, "alice", nil, "root"); err != nil {
		t.Fatal(err)
	}
	as("alice")
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: task}); err != nil {
		t.Fatalf("alice with no budget of her own: %v", err)
	}
	// Raised above what she spent: she launches.
	hundred := 100.0
	if err := s.Store.SetBudget(ctx, "alice", &hundred, "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: task}); err != nil {
		t.Fatalf("alice under a raised budget: %v", err)
	}
}
