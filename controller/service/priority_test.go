package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// `jobs priority`: an owner lowers their own waiting job; only an admin
// raises one or changes another user's; a job no longer waiting is
// refused, naming its status; a priority out of 0-1000 is a usage error.
func TestSetPriority(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	task := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(task, []byte("run: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	alice := s.As(&contract.Asker{Name: "alice"})
	bob := s.As(&contract.Asker{Name: "bob"})
	admin := s.As(&contract.Asker{Name: "root", Admin: true})
	launch := func() int64 {
		v, err := alice.Launch(ctx, contract.LaunchRequest{File: task})
		if err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	id := launch()
	stored := func(id int64) int {
		j, err := s.Store.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.Priority
	}

	v, err := alice.SetPriority(ctx, id, 100)
	if err != nil || v.Previous != 500 || v.Priority != 100 || stored(id) != 100 {
		t.Fatalf("owner lowers 500 -> 100: %+v %v, stored %d", v, err, stored(id))
	}
	var ae *contract.AdminError
	if _, err := alice.SetPriority(ctx, id, 101); !errors.As(err, &ae) || !strings.Contains(err.Error(), "job "+strconv.FormatInt(id, 10)+" is at 100; you may lower it") {
		t.Errorf("owner raises: %v, want an admin error naming the current priority", err)
	}
	var fe *contract.ForbiddenError
	if _, err := bob.SetPriority(ctx, id, 50); !errors.As(err, &fe) || fe.Owner != "alice" {
		t.Errorf("another user lowers: %v, want forbidden naming alice", err)
	}
	if stored(id) != 100 {
		t.Errorf("refused changes changed the priority to %d", stored(id))
	}
	if v, err := admin.SetPriority(ctx, id, 1000); err != nil || v.Priority != 1000 || stored(id) != 1000 {
		t.Errorf("admin raises to 1000: %+v %v", v, err)
	}
	var ue *contract.UsageError
	for _, n := range []int{-1, 1001} {
		if _, err := admin.SetPriority(ctx, id, n); !errors.As(err, &ue) || !strings.Contains(err.Error(), "is not a priority; use a whole number from 0 (lowest) to 1000") {
			t.Errorf("priority %d: %v, want a usage error", n, err)
		}
	}
	if _, err := admin.SetPriority(ctx, 9999, 1); !errors.Is(err, contract.ErrNoSuchJob) {
		t.Errorf("no such job: %v", err)
	}

	// Admitted and starting: PENDING still, but no longer waiting.
	admitted := launch()
	if _, err := s.Store.Admit(ctx, s.Now(), func(f store.AdmissionFacts) []strategy.Placed {
		return []strategy.Placed{{ID: admitted, Admit: true}}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetPriority(ctx, admitted, 1); !errors.Is(err, contract.ErrNotWaiting) || !strings.Contains(err.Error(), "is PENDING but was admitted") {
		t.Errorf("admitted job: %v, want ErrNotWaiting saying it was admitted", err)
	}
	started := launch()
	if _, err := s.Store.NewAttempt(ctx, started, 0, func(int) string { return "c" }, nil, lifecycle.Starting); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SetPriority(ctx, started, 1); !errors.Is(err, contract.ErrNotWaiting) || !strings.Contains(err.Error(), "job "+strconv.FormatInt(started, 10)+" is STARTING") {
		t.Errorf("started job: %v, want ErrNotWaiting naming STARTING", err)
	}
}
