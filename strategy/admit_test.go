package strategy

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// job is a waiting job of one node asking for res, submitted sec seconds
// after t0.
func job(id int64, user string, prio, sec int, res Amounts) WaitingJob {
	ask := Amounts{Jobs: 1, Nodes: 1}
	for r, n := range res {
		ask[r] = n
	}
	return WaitingJob{ID: id, User: user, Priority: prio, SubmittedAt: t0.Add(time.Duration(sec) * time.Second), Ask: ask}
}

func a100(n int) Amounts { return Amounts{GPU("A100"): n} }

func ptime(t time.Time) *time.Time { return &t }

func TestAdmit(t *testing.T) {
	tests := []struct {
		name string
		in   AdmitInput
		want []Placed
	}{
		{
			name: "no limits admits every job, in priority order",
			in: AdmitInput{Now: t0, Waiting: []WaitingJob{
				job(1, "alice", 0, 0, nil), job(2, "bob", 500, 1, nil), job(3, "alice", 1000, 2, nil)}},
			want: []Placed{{ID: 3, Admit: true}, {ID: 2, Admit: true}, {ID: 1, Admit: true}},
		},
		{
			name: "priority beats fair share: the heavy user's urgent job goes first",
			in: AdmitInput{Now: t0, Limits: Limits{Server: Amounts{Jobs: 1}},
				Waiting: []WaitingJob{job(1, "bob", 0, 0, nil), job(2, "alice", 900, 5, nil)},
				Used:    []UseSpan{{User: "alice", Charge: 8, Start: t0.Add(-time.Hour), End: ptime(t0)}},
			},
			want: []Placed{{ID: 2, Admit: true},
				{ID: 1, Place: 1, Reason: "waiting: the server runs 1 of 1 jobs (server limit); this job is next"}},
		},
		{
			name: "equal priority: the user with less recent use first, whatever was submitted first",
			in: AdmitInput{Now: t0, HalfLife: 24 * time.Hour, Limits: Limits{Server: Amounts{Jobs: 1}},
				Waiting: []WaitingJob{job(1, "alice", 0, 0, nil), job(2, "bob", 0, 10, nil)},
				Used:    []UseSpan{{User: "alice", Charge: 1, Start: t0.Add(-time.Hour), End: ptime(t0)}},
			},
			want: []Placed{{ID: 2, Admit: true},
				{ID: 1, Place: 1, Reason: "waiting: the server runs 1 of 1 jobs (server limit); this job is next"}},
		},
		{
			name: "a weight of 2 makes twice the use count the same: the tie goes to the earlier submitted",
			in: AdmitInput{Now: t0, Limits: Limits{Server: Amounts{Jobs: 1}},
				Weights: map[string]float64{"alice": 2},
				Waiting: []WaitingJob{job(1, "bob", 0, 10, nil), job(2, "alice", 0, 5, nil)},
				Used: []UseSpan{
					{User: "alice", Charge: 2, Start: t0.Add(-time.Hour), End: ptime(t0)},
					{User: "bob", Charge: 1, Start: t0.Add(-time.Hour), End: ptime(t0)},
				},
			},
			want: []Placed{{ID: 2, Admit: true},
				{ID: 1, Place: 1, Reason: "waiting: the server runs 1 of 1 jobs (server limit); this job is next"}},
		},
		{
			name: "full ties go by submission time, then by id",
			in: AdmitInput{Now: t0, Waiting: []WaitingJob{
				job(7, "carol", 0, 3, nil), job(5, "bob", 0, 3, nil), job(9, "alice", 0, 1, nil)}},
			want: []Placed{{ID: 9, Admit: true}, {ID: 5, Admit: true}, {ID: 7, Admit: true}},
		},
		{
			name: "a user at their limit waits, naming it; the others go on",
			in: AdmitInput{Now: t0,
				Limits:  Limits{Users: map[string]Amounts{"alice": a100(16)}},
				Held:    map[string]Amounts{"alice": {Jobs: 2, Nodes: 2, GPU("A100"): 16}},
				Waiting: []WaitingJob{job(1, "alice", 0, 0, a100(8)), job(2, "bob", 0, 1, a100(8))},
			},
			want: []Placed{{ID: 2, Admit: true},
				{ID: 1, Place: 1, Reason: "waiting: alice holds 16 of 16 A100 (user limit)"}},
		},
		{
			name: "the default user limit holds users without their own",
			in: AdmitInput{Now: t0,
				Limits: Limits{DefaultUser: Amounts{Jobs: 1}, Users: map[string]Amounts{"alice": {Jobs: 3}}},
				Waiting: []WaitingJob{job(1, "bob", 0, 0, nil), job(2, "bob", 0, 1, nil),
					job(3, "alice", 0, 2, nil), job(4, "alice", 0, 3, nil)},
			},
			want: []Placed{{ID: 1, Admit: true}, {ID: 3, Admit: true},
				{ID: 2, Place: 1, Reason: "waiting: bob holds 1 of 1 running jobs (user limit)"}, {ID: 4, Admit: true}},
		},
		{
			name: "the server's GPUs in use: the reason counts the jobs ahead",
			in: AdmitInput{Now: t0, HalfLife: time.Hour,
				Limits: Limits{Server: a100(64)},
				Held:   map[string]Amounts{"alice": {Jobs: 4, Nodes: 4, GPU("A100"): 32}, "bob": {Jobs: 4, Nodes: 4, GPU("A100"): 32}},
				Waiting: []WaitingJob{job(1, "carol", 0, 0, a100(8)), job(2, "carol", 0, 1, a100(8)),
					job(3, "dave", 0, 2, a100(8))},
			},
			want: []Placed{
				{ID: 1, Place: 1, Reason: "waiting: the server's 64 A100 are in use; this job is next"},
				{ID: 3, Place: 2, Reason: "waiting: the server's 64 A100 are in use; 1 job ahead of this one"},
				{ID: 2, Place: 3, Reason: "waiting: the server's 64 A100 are in use; 2 jobs ahead of this one"},
			},
		},
		{
			name: "no backfill: a small GPU job does not pass a big one waiting, a CPU job does",
			in: AdmitInput{Now: t0,
				Limits: Limits{Server: Amounts{GPU("A100"): 8, VCPUs: 100}},
				Held:   map[string]Amounts{"alice": {Jobs: 1, Nodes: 1, GPU("A100"): 4}},
				Waiting: []WaitingJob{job(1, "bob", 0, 0, a100(8)), job(2, "carol", 0, 1, a100(1)),
					job(3, "dave", 0, 2, Amounts{VCPUs: 4})},
			},
			want: []Placed{
				{ID: 1, Place: 1, Reason: "waiting: 4 of the server's 8 A100 are in use; this job is next"},
				{ID: 2, Place: 2, Reason: "waiting: 4 of the server's 8 A100 are in use; 1 job ahead of this one"},
				{ID: 3, Admit: true},
			},
		},
		{
			name: "a job that could never fit waits without holding anyone back",
			in: AdmitInput{Now: t0,
				Limits:  Limits{Server: a100(64), Users: map[string]Amounts{"alice": a100(16)}},
				Waiting: []WaitingJob{job(1, "alice", 1000, 0, a100(32)), job(2, "alice", 0, 1, a100(8))},
			},
			want: []Placed{
				{ID: 1, Place: 1, Reason: "waiting: asks for 32 A100, more than the user limit of alice of 16; it cannot start until the limit is raised"},
				{ID: 2, Admit: true},
			},
		},
		{
			name: "a group's limit holds its members together",
			in: AdmitInput{Now: t0,
				Limits: Limits{Groups: []Group{{Name: "ml", Members: []string{"alice", "bob"}, Limit: Amounts{Nodes: 3}}}},
				Held:   map[string]Amounts{"alice": {Jobs: 2, Nodes: 2}},
				Waiting: []WaitingJob{job(1, "bob", 0, 0, nil), job(2, "bob", 0, 1, nil),
					job(3, "carol", 0, 2, nil)},
			},
			want: []Placed{{ID: 1, Admit: true}, {ID: 3, Admit: true},
				{ID: 2, Place: 1, Reason: "waiting: group ml holds 3 of 3 nodes (group limit)"}},
		},
		{
			name: "one pass shares free places between users instead of giving them to one",
			in: AdmitInput{Now: t0, HalfLife: time.Hour, Limits: Limits{Server: Amounts{Jobs: 6}},
				Waiting: []WaitingJob{
					job(1, "big", 0, 0, nil), job(2, "big", 0, 1, nil), job(3, "big", 0, 2, nil), job(4, "big", 0, 3, nil),
					job(5, "mid", 0, 4, nil), job(6, "mid", 0, 5, nil), job(7, "mid", 0, 6, nil),
					job(8, "small", 0, 7, nil), job(9, "small", 0, 8, nil),
				}},
			want: []Placed{
				{ID: 1, Admit: true}, {ID: 5, Admit: true}, {ID: 8, Admit: true},
				{ID: 2, Admit: true}, {ID: 6, Admit: true}, {ID: 9, Admit: true},
				{ID: 3, Place: 1, Reason: "waiting: the server runs 6 of 6 jobs (server limit); this job is next"},
				{ID: 7, Place: 2, Reason: "waiting: the server runs 6 of 6 jobs (server limit); 1 job ahead of this one"},
				{ID: 4, Place: 3, Reason: "waiting: the server runs 6 of 6 jobs (server limit); 2 jobs ahead of this one"},
			},
		},
		{
			name: "what a user holds now counts against their share",
			in: AdmitInput{Now: t0, HalfLife: time.Hour, Limits: Limits{Server: Amounts{Jobs: 21}},
				Held:    map[string]Amounts{"big": {Jobs: 20, Nodes: 20}},
				Waiting: []WaitingJob{job(1, "big", 0, 0, nil), job(2, "small", 0, 100, nil)},
			},
			want: []Placed{{ID: 2, Admit: true},
				{ID: 1, Place: 1, Reason: "waiting: the server runs 21 of 21 jobs (server limit); this job is next"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Admit(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}

// Past use fades: alice's heavy use a day ago weighs less, with a
// half-life of an hour, than bob's light use just now; with a half-life
// of a week it still weighs more.
func TestAdmitDecaysPastUse(t *testing.T) {
	now := t0.Add(24 * time.Hour)
	in := AdmitInput{Now: now, Limits: Limits{Server: Amounts{Jobs: 1}},
		Waiting: []WaitingJob{job(1, "alice", 0, 0, nil), job(2, "bob", 0, 1, nil)},
		Used: []UseSpan{
			{User: "alice", Charge: 100, Start: t0.Add(-time.Hour), End: ptime(t0)},
			{User: "bob", Charge: 1, Start: now.Add(-time.Hour), End: ptime(now)},
		}}
	for _, tc := range []struct {
		halfLife time.Duration
		first    int64
	}{{time.Hour, 1}, {7 * 24 * time.Hour, 2}} {
		in.HalfLife = tc.halfLife
		if got := Admit(in); !got[0].Admit || got[0].ID != tc.first {
			t.Errorf("half-life %v: admitted %+v first, want job %d", tc.halfLife, got[0], tc.first)
		}
	}
}

func TestDecayedUse(t *testing.T) {
	h := time.Hour
	tau := h.Seconds() / math.Ln2
	tests := []struct {
		name     string
		spans    []UseSpan
		halfLife time.Duration
		want     map[string]float64
	}{
		{"an hour ending now, half-life an hour: half of a mean life", []UseSpan{{User: "a", Charge: 2, Start: t0.Add(-h), End: ptime(t0)}}, h,
			map[string]float64{"a": 2 * tau * 0.5}},
		{"the same an hour earlier weighs half", []UseSpan{{User: "a", Charge: 2, Start: t0.Add(-2 * h), End: ptime(t0.Add(-h))}}, h,
			map[string]float64{"a": 2 * tau * 0.25}},
		{"a running span counts up to now", []UseSpan{{User: "a", Charge: 1, Start: t0.Add(-h)}}, h,
			map[string]float64{"a": tau * 0.5}},
		{"no half-life: plain charge-seconds", []UseSpan{{User: "a", Charge: 3, Start: t0.Add(-h), End: ptime(t0)}}, 0,
			map[string]float64{"a": 3 * 3600}},
		{"use after now counts nothing", []UseSpan{{User: "a", Charge: 3, Start: t0.Add(h)}}, h, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecayedUse(tt.spans, t0, tt.halfLife)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-6 })); diff != "" {
				t.Errorf("DecayedUse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLimitsExceeded(t *testing.T) {
	l := Limits{Server: Amounts{Nodes: 10}, DefaultUser: a100(8),
		Groups: []Group{{Name: "ml", Members: []string{"bob"}, Limit: Amounts{VCPUs: 64}}}}
	tests := []struct {
		user string
		ask  Amounts
		want string
	}{
		{"alice", Amounts{Nodes: 10, GPU("A100"): 8}, ""},
		{"alice", Amounts{Nodes: 11}, "asks for 11 nodes, more than the server limit of 10"},
		{"alice", a100(9), "asks for 9 A100, more than the user limit of alice of 8"},
		{"bob", Amounts{VCPUs: 65}, "asks for 65 vCPUs, more than the limit of group ml of 64"},
		{"carol", Amounts{VCPUs: 65}, ""},
	}
	for _, tt := range tests {
		if got := l.Exceeded(tt.user, tt.ask); got != tt.want {
			t.Errorf("Exceeded(%s, %v) = %q, want %q", tt.user, tt.ask, got, tt.want)
		}
	}
}

func TestCharge(t *testing.T) {
	for _, tc := range []struct {
		a    Amounts
		want float64
	}{
		{Amounts{Nodes: 2, VCPUs: 8, GPU("A100"): 16, GPU("H100"): 2}, 18},
		{Amounts{Nodes: 2, VCPUs: 8}, 8},
		{Amounts{Nodes: 3}, 3},
		{nil, 1},
	} {
		if got := tc.a.Charge(); got != tc.want {
			t.Errorf("%v.Charge() = %v, want %v", tc.a, got, tc.want)
		}
	}
}

// BenchmarkAdmit chooses the next jobs with 10,000 waiting across 100
// users, under a server limit most of which is held.
func BenchmarkAdmit(b *testing.B) {
	in := benchAdmitInput(10000, 100)
	b.ResetTimer()
	for range b.N {
		Admit(in)
	}
}

// benchAdmitInput is n waiting jobs of users users, a tenth of them asking
// for GPUs, with a day of past use each and a server holding 180 of 200
// running jobs.
func benchAdmitInput(n, users int) AdmitInput {
	in := AdmitInput{Now: t0, HalfLife: 24 * time.Hour,
		Limits: Limits{Server: Amounts{Jobs: 200, GPU("A100"): 64}, DefaultUser: Amounts{Jobs: 20}},
		Held:   map[string]Amounts{}}
	for i := range n {
		user := fmt.Sprintf("user%03d", i%users)
		var res Amounts
		if i%10 == 0 {
			res = a100(8)
		}
		in.Waiting = append(in.Waiting, job(int64(i+1), user, (i%7)*100, i, res))
	}
	for u := range users {
		user := fmt.Sprintf("user%03d", u)
		in.Held[user] = Amounts{Jobs: 180 / users, Nodes: 180 / users}
		for k := range 10 {
			start := t0.Add(-time.Duration(k+1) * 2 * time.Hour)
			in.Used = append(in.Used, UseSpan{User: user, Charge: float64(1 + u%3), Start: start, End: ptime(start.Add(time.Hour))})
		}
	}
	return in
}
