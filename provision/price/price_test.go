package price

import (
	"math"
	"testing"
	"time"

	"sortie/schema"
)

func TestCost(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration, perHour float64) Quote {
		return Quote{PerHour: perHour, Effective: t0.Add(d)}
	}
	cases := []struct {
		name     string
		history  []Quote
		nodes    int
		from, to time.Duration
		want     float64
		estimate bool
	}{
		{"one price, one node, an hour", []Quote{at(-time.Hour, 0.5)}, 1, 0, time.Hour, 0.5, false},
		{"two nodes", []Quote{at(-time.Hour, 0.5)}, 2, 0, time.Hour, 1.0, false},
		{"a change half-way", []Quote{at(-time.Hour, 0.4), at(30*time.Minute, 0.8)}, 1, 0, time.Hour, 0.6, false},
		{"a change after the end is not charged", []Quote{at(-time.Hour, 0.4), at(2*time.Hour, 9)}, 1, 0, time.Hour, 0.4, false},
		{"shorter than the minimum is charged the minimum", []Quote{at(-time.Hour, 3.6)}, 1, 0, 10 * time.Second, 0.06, false},
		{"no price known before launch is an estimate", []Quote{at(30*time.Minute, 1)}, 1, 0, time.Hour, 1, true},
		{"no history", nil, 1, 0, time.Hour, 0, true},
	}
	for _, c := range cases {
		got := Cost(c.history, c.nodes, t0.Add(c.from), t0.Add(c.to), time.Minute)
		if math.Abs(got.Dollars-c.want) > 1e-9 || got.Estimate != c.estimate {
			t.Errorf("%s: got %+v, want %v (estimate %v)", c.name, got, c.want, c.estimate)
		}
	}
	stale := []Quote{at(-time.Hour, 1)}
	stale[0].Stale = true
	if got := Cost(stale, 1, t0, t0.Add(time.Hour), 0); !got.Estimate {
		t.Errorf("a stale price: got %+v, want an estimate", got)
	}
}

func TestKeyOf(t *testing.T) {
	pl := schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"}
	if got, want := KeyOf(pl, schema.Resources{InstanceType: "m6i.large", UseSpot: true}),
		(Key{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.large", Spot: true}); got != want {
		t.Errorf("spot: %+v, want %+v", got, want)
	}
	if got, want := KeyOf(pl, schema.Resources{InstanceType: "m6i.large"}),
		(Key{Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large"}); got != want {
		t.Errorf("on-demand: %+v, want the region's %+v", got, want)
	}
	local := schema.Placement{Cloud: "local", Region: "local", Zone: "local-a"}
	if got, want := KeyOf(local, schema.Resources{CPUs: "4+"}), (Key{Cloud: "local", Region: "local", InstanceType: "cpus=4"}); got != want {
		t.Errorf("per resource: %+v, want %+v", got, want)
	}
}
