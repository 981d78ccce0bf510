package controller

import (
	"testing"
	"time"

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

// A zone with no spot price of its own is priced by its region's, and a
// zone with no price at all goes last.
func TestPriceOfFallsBackToTheRegion(t *testing.T) {
	c := &Controller{Prices: bookOf{
		{Cloud: "gcp", Region: "r", InstanceType: "n2", Spot: true}: 0.2,
		{Cloud: "gcp", Region: "r", InstanceType: "n2"}:             0.9,
	}}
	for _, tt := range []struct {
		spot  bool
		want  float64
		known bool
	}{{true, 0.2, true}, {false, 0.9, true}} {
		cand := candAt("GCP", "r", "r-a", "n2", tt.spot)
		got, known := c.priceOf(time.Time{})(cand)
		if got != tt.want || known != tt.known {
			t.Errorf("spot %v: price %v %v, want %v %v", tt.spot, got, known, tt.want, tt.known)
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
