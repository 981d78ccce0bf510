package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"sortie/controller/store"
	"sortie/provision/local"
)

// preemptRunning runs job id's current attempt until it runs, has the
// cloud take its node, and steps until the attempt has ended.
func preemptRunning(t *testing.T, c *Controller, id int64) *store.Attempt {
	t.Helper()
	a := untilRunning(t, c, id)
	for _, r := range runners(t, c, a) {
		waitFor(t, r, "the task running", running)
	}
	if err := local.New(local.Config{Home: c.Config.Home}).Preempt(context.Background(), a.Cluster, 0); err != nil {
		t.Fatal(err)
	}
	step(t, c, id)
	as, err := c.Store.Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return as[len(as)-1]
}

// on_demand_after: 2 recovers a spot job on spot after its first
// preemption and on-demand after its second, and its attempts say how each
// was launched.
func TestOnDemandAfterPreemptions(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	c.Now = time.Now
	id := createJob(t, c, "resources: {cloud: local, use_spot: true, job_recovery: {on_demand_after: 2}}\nrun: sleep 300\n")
	first := preemptRunning(t, c, id)
	if first.Outcome != "preempted" || strings.Contains(first.Decision, "on-demand") {
		t.Fatalf("first attempt %s: %q, want preempted and recovered on spot", first.Outcome, first.Decision)
	}
	second := preemptRunning(t, c, id)
	if second.OnDemand {
		t.Fatal("the second attempt launched on-demand after one preemption")
	}
	if want := "2 preemptions reach on_demand_after 2: recovering on-demand"; !strings.HasSuffix(second.Decision, want) {
		t.Fatalf("second attempt's decision %q, want it to end %q", second.Decision, want)
	}
	third := untilRunning(t, c, id)
	if !third.OnDemand {
		t.Fatalf("third attempt %+v, want it launched on-demand", third)
	}
	// Preempted again on-demand (the local cloud can): it stays on-demand.
	fourth := preemptRunning(t, c, id)
	if fourth.Attempt != 3 || strings.Contains(fourth.Decision, "on_demand_after") {
		t.Fatalf("attempt %d decision %q, want the third recovered without a switch", fourth.Attempt, fourth.Decision)
	}
	last := untilRunning(t, c, id)
	if !last.OnDemand {
		t.Error("the task went back to spot after its switch")
	}
	c.Store.RequestCancelBy(ctx, []int64{id}, "test")
	step(t, c, id)
}

// on_demand_after_cost switches once the preempted spot attempts cost
// more than on-demand would have for the longest of them: at a spot price
// ten times the on-demand one, the first preemption does.
func TestOnDemandAfterCost(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	c.Now = time.Now
	c.Prices = bookOf{spotKey("local-a"): 10, spotKey("local-b"): 10, {Cloud: "local", Region: "local"}: 1}
	id := createJob(t, c, "resources: {cloud: local, use_spot: true, job_recovery: {on_demand_after_cost: true}}\nrun: sleep 300\n")
	first := preemptRunning(t, c, id)
	if !strings.Contains(first.Decision, "the spot attempts preempted so far (1) cost $") || !strings.HasSuffix(first.Decision, "recovering on-demand") {
		t.Fatalf("decision %q, want a switch to on-demand by cost", first.Decision)
	}
	if next := untilRunning(t, c, id); !next.OnDemand {
		t.Fatalf("next attempt %+v, want it launched on-demand", next)
	}
	c.Store.RequestCancelBy(ctx, []int64{id}, "test")
	step(t, c, id)
}

// With spot cheaper than on-demand, the preemption recovers on spot.
func TestOnDemandAfterCostStaysOnSpotWhileCheaper(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	c.Now = time.Now
	c.Prices = bookOf{spotKey("local-a"): 0.1, spotKey("local-b"): 0.1, {Cloud: "local", Region: "local"}: 1}
	id := createJob(t, c, "resources: {cloud: local, use_spot: true, job_recovery: {on_demand_after_cost: true}}\nrun: sleep 300\n")
	if first := preemptRunning(t, c, id); strings.Contains(first.Decision, "on-demand") {
		t.Fatalf("decision %q, want a recovery on spot", first.Decision)
	}
	if next := untilRunning(t, c, id); next.OnDemand {
		t.Fatal("next attempt launched on-demand")
	}
	c.Store.RequestCancelBy(ctx, []int64{id}, "test")
	step(t, c, id)
}
