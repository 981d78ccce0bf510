package service

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/strategy"
)

// The dry run shows what an attempt at each placement is expected to cost
// an hour, every node, from the prices the store's cache holds; null where
// none is known.
func TestPlanShowsTheHourlyCost(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	now := time.Now()
	if err := s.Store.PutPrices(ctx, []store.Price{{Cloud: "local", Region: "local", InstanceType: "cpus=2", PerHour: 0.5,
		Source: "config.yaml local.prices", Effective: now.Add(-time.Hour), ReadAt: now}}); err != nil {
		t.Fatal(err)
	}
	root := project(t, map[string]string{"p.yaml": "num_nodes: 3\nresources: {cloud: local, cpus: 2}\nrun: 'true'\n---\n" +
		"resources: {cloud: local, cpus: 8}\nrun: 'true'\n"})
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "p.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range plan.Tasks[0].Placements {
		if pl.PricePerHour == nil || *pl.PricePerHour != 0.5 || pl.HourlyCost == nil || *pl.HourlyCost != 1.5 {
			t.Errorf("task 0 at %s/%v: price %v, hourly %v; want $0.50 a node, $1.50 for 3", pl.Cloud, deref(pl.Zone), pl.PricePerHour, pl.HourlyCost)
		}
	}
	for _, pl := range plan.Tasks[1].Placements {
		if pl.PricePerHour != nil || pl.HourlyCost != nil {
			t.Errorf("task 1 (no price known): price %v, hourly %v; want null", pl.PricePerHour, pl.HourlyCost)
		}
	}
}

// The dry run of a task with placement: cheapest lists its placements in
// the order the controller tries them: the cheapest spot zone first.
func TestPlanOrdersCheapestFirst(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	now := time.Now()
	spot := func(zone string, p float64) store.Price {
		return store.Price{Cloud: "local", Region: "local", Zone: zone, InstanceType: "cpus=2", Spot: true, PerHour: p,
			Source: "config.yaml local.prices", Effective: now.Add(-time.Hour), ReadAt: now}
	}
	if err := s.Store.PutPrices(ctx, []store.Price{spot("local-a", 0.3), spot("local-b", 0.1)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ placement, first string }{{"cheapest", "local-b"}, {"written", "local-a"}} {
		root := project(t, map[string]string{"p.yaml": "resources: {cloud: local, cpus: 2, use_spot: true, placement: " + tc.placement + "}\nrun: 'true'\n"})
		plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "p.yaml"), Dir: root})
		if err != nil {
			t.Fatal(err)
		}
		if pls := plan.Tasks[0].Placements; len(pls) != 2 || deref(pls[0].Zone) != tc.first {
			t.Errorf("placement %s: first placement %+v, want %s", tc.placement, pls, tc.first)
		}
	}
}

// A launch stores what the job is expected to cost an hour with its ask
// (its cheapest known placement, every node; the most of its tasks), in
// cents; a task whose price is unknown asks nothing; a dollar quota
// refuses a job that could never fit under it, naming dollars.
func TestLaunchAsksItsHourlyCost(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	now := time.Now()
	if err := s.Store.PutPrices(ctx, []store.Price{{Cloud: "local", Region: "local", InstanceType: "cpus=2", PerHour: 0.5,
		Source: "config.yaml local.prices", Effective: now.Add(-time.Hour), ReadAt: now}}); err != nil {
		t.Fatal(err)
	}
	root := project(t, map[string]string{
		"p.yaml":       "num_nodes: 3\nresources: {cloud: local, cpus: 2}\nrun: 'true'\n---\nresources: {cloud: local, cpus: 8}\nrun: 'true'\n",
		"unknown.yaml": "resources: {cloud: local, cpus: 8}\nrun: 'true'\n",
	})
	// Priced only while a dollar limit is in effect.
	hundred := 100.0
	if _, err := s.SetQuota(ctx, contract.QuotaRequest{Scope: "user", Name: "nobody", HourlyCost: &hundred}); err != nil {
		t.Fatal(err)
	}
	asked := func(file string) int {
		t.Helper()
		v, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, file), Dir: root})
		if err != nil {
			t.Fatal(err)
		}
		j, _ := s.Store.Job(ctx, v.ID)
		a, err := store.ParseAsk(j.Ask)
		if err != nil {
			t.Fatal(err)
		}
		return a[strategy.HourlyCost]
	}
	if got := asked("p.yaml"); got != 150 {
		t.Errorf("the pipeline asks %d cents an hour, want 150 ($0.50 x 3 nodes)", got)
	}
	if got := asked("unknown.yaml"); got != 0 {
		t.Errorf("a job of unknown price asks %d cents an hour, want 0", got)
	}
	if _, err := s.UnsetQuota(ctx, contract.QuotaRequest{Scope: "user", Name: "nobody"}); err != nil {
		t.Fatal(err)
	}
	if got := asked("p.yaml"); got != 0 {
		t.Errorf("without a dollar limit the pipeline asks %d cents an hour, want 0 (not priced)", got)
	}
	one := 1.0
	if _, err := s.SetQuota(ctx, contract.QuotaRequest{Scope: "server", HourlyCost: &one}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "p.yaml"), Dir: root})
	if err == nil || !strings.Contains(err.Error(), "the job asks for $1.50 an hour, more than the server limit of $1.00") {
		t.Errorf("a job over the dollar quota: %v", err)
	}
}
