package strategy

import (
	"testing"
	"time"
)

// A dollar limit counts cents an hour: a job whose expected cost does not
// fit waits saying dollars; one whose price is unknown (asks 0) is not
// held back by it; one that could never fit is named in dollars.
func TestAdmitHourlyCost(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	limits := Limits{Server: Amounts{HourlyCost: 4000}, Users: map[string]Amounts{"bob": {HourlyCost: 1000}}}
	got := Admit(AdmitInput{Now: now, Limits: limits, HalfLife: time.Hour,
		Held: map[string]Amounts{"alice": {Jobs: 1, HourlyCost: 3800}},
		Waiting: []WaitingJob{
			{ID: 1, User: "alice", Priority: 500, SubmittedAt: now, Ask: Amounts{Jobs: 1, HourlyCost: 250}},
			{ID: 2, User: "carol", Priority: 500, SubmittedAt: now.Add(time.Second), Ask: Amounts{Jobs: 1}},
			{ID: 3, User: "bob", Priority: 500, SubmittedAt: now.Add(2 * time.Second), Ask: Amounts{Jobs: 1, HourlyCost: 1050}},
		}})
	want := map[int64]string{
		1: "waiting: $38.00 of the server's $40.00 an hour are in use; this job is next",
		2: "",
		3: "waiting: asks for $10.50 an hour, more than the user limit of bob of $10.00; it cannot start until the limit is raised",
	}
	for _, p := range got {
		if p.Reason != want[p.ID] || p.Admit != (want[p.ID] == "") {
			t.Errorf("job %d: admit %v reason %q, want %q", p.ID, p.Admit, p.Reason, want[p.ID])
		}
	}
	if why := limits.Exceeded("bob", Amounts{HourlyCost: 1001}); why != "asks for $10.01 an hour, more than the user limit of bob of $10.00" {
		t.Errorf("Exceeded: %q", why)
	}
	for _, tc := range []struct {
		dollars float64
		cents   int
	}{{40, 4000}, {0.125, 13}, {-1, 0}, {2.675, 268}} {
		if got := Cents(tc.dollars); got != tc.cents {
			t.Errorf("Cents(%v) = %d, want %d", tc.dollars, got, tc.cents)
		}
	}
	if s := DollarsOfCents(5); s != "$0.05" {
		t.Errorf("DollarsOfCents(5) = %q", s)
	}
}
