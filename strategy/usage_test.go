package strategy

import (
	"math"
	"testing"
	"time"
)

// Usage lists the users with jobs holding something or waiting, by name,
// with what they hold, their own limit, their weight, their decayed use
// and its share of everyone's (a user with nothing now still counts in
// the total).
func TestUsage(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(h float64) time.Time { return now.Add(time.Duration(h * float64(time.Hour))) }
	end := func(h float64) *time.Time { t := at(h); return &t }
	in := AdmitInput{
		Now: now,
		Waiting: []WaitingJob{
			{ID: 3, User: "bob", Ask: Amounts{Jobs: 1, GPU("A100"): 8}},
			{ID: 4, User: "bob", Ask: Amounts{Jobs: 1}},
		},
		Held: map[string]Amounts{
			"alice": {Jobs: 1, Nodes: 1, GPU("A100"): 8},
			"dave":  {Jobs: 0}, // ended since: nothing held
		},
		Limits: Limits{
			DefaultUser: Amounts{GPU("A100"): 16},
			Users:       map[string]Amounts{"alice": {GPU("A100"): 32}},
		},
		Weights: map[string]float64{"bob": 2},
		Used: []UseSpan{
			{User: "alice", Charge: 8, Start: at(-1)},               // still running
			{User: "bob", Charge: 8, Start: at(-2), End: end(-1)},   // one half-life ago
			{User: "carol", Charge: 8, Start: at(-2), End: end(-1)}, // nothing now
			{User: "alice", Charge: 8, Start: at(1), End: end(2)},   // after now: nothing
		},
		HalfLife: time.Hour,
	}
	rows := Usage(in)
	tau := time.Hour.Seconds() / math.Ln2
	if len(rows) != 2 || rows[0].User != "alice" || rows[1].User != "bob" {
		t.Fatalf("rows %+v, want alice and bob", rows)
	}
	a, b := rows[0], rows[1]
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-6*math.Max(1, want) }
	if !near(a.Use, 8*tau*0.5) || !near(b.Use, 8*tau*0.25) {
		t.Errorf("use alice %v bob %v, want %v and %v", a.Use, b.Use, 8*tau*0.5, 8*tau*0.25)
	}
	if !near(a.Share, 0.5) || !near(b.Share, 0.25) {
		t.Errorf("shares alice %v bob %v, want 0.5 and 0.25 (carol holds the rest)", a.Share, b.Share)
	}
	if a.Weight != 1 || b.Weight != 2 {
		t.Errorf("weights %v %v, want 1 and 2", a.Weight, b.Weight)
	}
	if a.Limit[GPU("A100")] != 32 || b.Limit[GPU("A100")] != 16 {
		t.Errorf("limits %v %v, want alice's own 32 and the default 16", a.Limit, b.Limit)
	}
	if a.Held[GPU("A100")] != 8 || a.Held[Jobs] != 1 || len(b.Held) != 0 || a.Waiting != 0 || b.Waiting != 2 {
		t.Errorf("alice holds %v waits %d, bob holds %v waits %d", a.Held, a.Waiting, b.Held, b.Waiting)
	}

	// No decay: plain charge-seconds. No use at all: shares are 0.
	in.HalfLife = 0
	if rows := Usage(in); !near(rows[0].Use, 8*3600) {
		t.Errorf("undecayed use %v, want %v", rows[0].Use, 8*3600.0)
	}
	in.Used = nil
	if rows := Usage(in); rows[0].Share != 0 || rows[1].Share != 0 {
		t.Errorf("shares without use: %+v", rows)
	}
}
