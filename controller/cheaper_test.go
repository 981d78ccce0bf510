package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision/price"
	"sortie/schema"
	"sortie/strategy"
)

// bookOf is a price.Book of fixed quotes, each in effect from the zero
// time on.
type bookOf map[price.Key]float64

func (b bookOf) History(key price.Key, from, to time.Time) []price.Quote {
	p, ok := b[key]
	if !ok {
		return nil
	}
	return []price.Quote{{Key: key, PerHour: p, Source: "test"}}
}

func spotKey(zone string) price.Key {
	return price.Key{Cloud: "local", Region: "local", Zone: zone, Spot: true}
}

// With placement: cheapest, a spot job launches in the zone whose spot
// price is lowest, not in the first zone written.
func TestPlacementCheapestLaunchesInTheCheapestZone(t *testing.T) {
	c := localController(t)
	c.Prices = bookOf{spotKey("local-a"): 0.30, spotKey("local-b"): 0.10}
	id := createJob(t, c, "resources: {cloud: local, use_spot: true, placement: cheapest}\nrun: echo ok\n")
	_, a := step(t, c, id)
	if a == nil || a.Zone != "local-b" {
		t.Fatalf("attempt %+v, want it launched on local-b, the cheaper zone", a)
	}
}

// Without placement: cheapest the prices change nothing: the first zone.
func TestPlacementWrittenKeepsTheOrder(t *testing.T) {
	c := localController(t)
	c.Prices = bookOf{spotKey("local-a"): 0.30, spotKey("local-b"): 0.10}
	id := createJob(t, c, "resources: {cloud: local, use_spot: true}\nrun: echo ok\n")
	_, a := step(t, c, id)
	if a == nil || a.Zone != "local-a" {
		t.Fatalf("attempt %+v, want it launched on local-a, the first zone", a)
	}
}

// A spot candidate is priced by its zone's spot price, an on-demand one by
// its region's price; a candidate with no price is not priced.
func TestPriceOfAsksTheZoneForSpot(t *testing.T) {
	c := &Controller{Prices: bookOf{
		{Cloud: "gcp", Region: "r", Zone: "r-a", InstanceType: "n2", Spot: true}: 0.2,
		{Cloud: "gcp", Region: "r", InstanceType: "n2"}:                          0.9,
	}}
	for _, tt := range []struct {
		spot bool
		want float64
	}{{true, 0.2}, {false, 0.9}} {
		got, known := c.priceOf(time.Time{})(candAt("gcp", "r", "r-a", "n2", tt.spot))
		if got != tt.want || !known {
			t.Errorf("spot %v: price %v %v, want %v", tt.spot, got, known, tt.want)
		}
	}
	if _, known := c.priceOf(time.Time{})(candAt("gcp", "other", "o-a", "n2", true)); known {
		t.Error("a region with no price is priced")
	}
	if _, known := (&Controller{}).priceOf(time.Time{})(candAt("gcp", "r", "r-a", "n2", true)); known {
		t.Error("a controller with no Book prices a candidate")
	}
}

func candAt(cloud, region, zone, typ string, spot bool) strategy.Candidate {
	return strategy.Candidate{Placement: schema.Placement{Cloud: cloud, Region: region, Zone: zone},
		Resources: schema.Resources{Cloud: cloud, Region: region, Zone: zone, InstanceType: typ, UseSpot: spot}}
}

// preemptAt stores a job whose spot attempt on local/local/zone was
// preempted (ended now, by the store's clock).
func preemptAt(t *testing.T, st *store.Store, zone string) {
	t.Helper()
	ctx := context.Background()
	id, err := st.CreateJob(ctx, &store.Job{Name: "spot", Spec: []byte(`{}`)}, []store.NewTask{{Name: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.NewAttempt(ctx, id, 0, func(n int) string { return fmt.Sprintf("sortie-spot-%d-%d", id, n) }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MarkLaunched(ctx, a.ID, "local", "local", zone, []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.Preempted, Reason: "spot interruption"},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Rule: strategy.RuleNoRecovery, Reason: "preempted"}, store.Facts{}); err != nil {
		t.Fatal(err)
	}
}

// Another job's spot attempt was just preempted on local-a: a new spot
// job launches on local-b; an on-demand job still on local-a; and once the
// preemption is four half-lives old, spot jobs go back to local-a.
func TestRecentlyPreemptedZoneIsTriedLastForSpot(t *testing.T) {
	c := localController(t)
	c.Now = time.Now // the store's clock, which stamps the preemption
	preemptAt(t, c.Store, "local-a")
	spot := "resources: {cloud: local, use_spot: true}\nrun: echo ok\n"
	if _, a := step(t, c, createJob(t, c, spot)); a == nil || a.Zone != "local-b" {
		t.Fatalf("spot attempt %+v, want it launched on local-b", a)
	}
	if _, a := step(t, c, createJob(t, c, "resources: {cloud: local}\nrun: echo ok\n")); a == nil || a.Zone != "local-a" {
		t.Fatalf("on-demand attempt %+v, want it launched on local-a", a)
	}
	later := time.Now().Add(4*time.Hour + time.Minute)
	c.Now = func() time.Time { return later }
	if _, a := step(t, c, createJob(t, c, spot)); a == nil || a.Zone != "local-a" {
		t.Fatalf("spot attempt after 4 half-lives %+v, want it launched on local-a", a)
	}
}

// preemptions: {off: true} keeps the order.
func TestPreemptionsOffKeepsTheOrder(t *testing.T) {
	c := localControllerWith(t, "preemptions:\n  off: true\n")
	c.Now = time.Now
	preemptAt(t, c.Store, "local-a")
	if _, a := step(t, c, createJob(t, c, "resources: {cloud: local, use_spot: true}\nrun: echo ok\n")); a == nil || a.Zone != "local-a" {
		t.Fatalf("spot attempt %+v, want it launched on local-a", a)
	}
}
