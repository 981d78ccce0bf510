package service

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// A placement set aside is said as such, once per round, and is not said
// to have failed or been chosen.
func TestFollowSaysAPlacementSetAside(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": "run: train\n"})
	v, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	st := newStepper(func(text string) { said = append(said, text) })
	a, err := s.Store.NewAttempt(ctx, v.ID, 0, func(int) string { return "sortie-1-0-1" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.RecordLaunchTry(ctx, store.LaunchTry{JobID: v.ID, Attempt: 1, Cloud: "sim", Region: "sim-east", Zone: "sim-east-a",
		Class: strategy.ClassSetAside, Message: "sim/sim-east/sim-east-a set aside until 14:32 UTC: 3 jobs lost their node there"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.SetPlacement(ctx, a.ID, "sim", "sim-east", "sim-east-b", "", store.Billing{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		j, err := s.Store.Job(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		as, err := s.Store.Attempts(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.step(ctx, st, j, as, len(as)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"Attempt 1: sim/sim-east/sim-east-a set aside until 14:32 UTC: 3 jobs lost their node there; it is tried last.",
		"Attempt 1: placement chosen: sim/sim-east/sim-east-b, on-demand.",
		"Attempt 1: requesting 1 instance there for cluster sortie-1-0-1.",
	}
	if diff := cmp.Diff(want, said); diff != "" {
		t.Errorf("said (-want +got):\n%s", diff)
	}
}
