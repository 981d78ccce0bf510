package strategy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// running is an admitted job of one node asking for res, admitted min
// minutes before t0.
func running(id int64, user string, prio, min int, res Amounts) AdmittedJob {
	ask := Amounts{Jobs: 1, Nodes: 1}
	for r, n := range res {
		ask[r] = n
	}
	return AdmittedJob{ID: id, User: user, Priority: prio, Ask: ask, AdmittedAt: t0.Add(-time.Duration(min) * time.Minute)}
}

func yielding(a AdmittedJob, to int64) AdmittedJob {
	a.YieldFor = to
	return a
}

func TestAdmitPreempts(t *testing.T) {
	tests := []struct {
		name     string
		limits   Limits
		admitted []AdmittedJob
		waiting  []WaitingJob
		off      bool
		want     []Placed
	}{
		{
			name:     "a priority-900 job takes a priority-100 job's place under the server limit",
			limits:   Limits{Server: Amounts{Jobs: 1}},
			admitted: []AdmittedJob{running(1, "alice", 100, 10, nil)},
			waiting:  []WaitingJob{job(2, "bob", 900, 0, nil)},
			want: []Placed{{ID: 2, Place: 1, Preempt: []int64{1},
				Reason: "waiting: preempting job 1 (priority 100) for room under the server limit"}},
		},
		{
			name:     "preemption off: nobody is preempted",
			limits:   Limits{Server: Amounts{Jobs: 1}},
			admitted: []AdmittedJob{running(1, "alice", 100, 10, nil)},
			waiting:  []WaitingJob{job(2, "bob", 900, 0, nil)},
			off:      true,
			want:     []Placed{{ID: 2, Place: 1, Reason: "waiting: the server runs 1 of 1 jobs (server limit); this job is next"}},
		},
		{
			name:     "equal priority is never preempted",
			limits:   Limits{Server: Amounts{Jobs: 1}},
			admitted: []AdmittedJob{running(1, "alice", 500, 10, nil)},
			waiting:  []WaitingJob{job(2, "bob", 500, 0, nil)},
			want:     []Placed{{ID: 2, Place: 1, Reason: "waiting: the server runs 1 of 1 jobs (server limit); this job is next"}},
		},
		{
			name:   "the lowest priority goes first, whenever it was admitted",
			limits: Limits{Server: Amounts{Jobs: 3}},
			admitted: []AdmittedJob{running(1, "alice", 100, 5, nil), running(2, "alice", 50, 300, nil),
				running(3, "bob", 200, 1, nil)},
			waiting: []WaitingJob{job(4, "carol", 900, 0, nil)},
			want: []Placed{{ID: 4, Place: 1, Preempt: []int64{2},
				Reason: "waiting: preempting job 2 (priority 50) for room under the server limit"}},
		},
		{
			name:   "equal priorities: the most recently admitted goes, losing the least work",
			limits: Limits{Server: Amounts{Jobs: 3}},
			admitted: []AdmittedJob{running(1, "alice", 100, 60, nil), running(2, "bob", 100, 5, nil),
				running(3, "alice", 100, 30, nil)},
			waiting: []WaitingJob{job(4, "carol", 900, 0, nil)},
			want: []Placed{{ID: 4, Place: 1, Preempt: []int64{2},
				Reason: "waiting: preempting job 2 (priority 100) for room under the server limit"}},
		},
		{
			name:   "several jobs make room together",
			limits: Limits{Server: a100(12)},
			admitted: []AdmittedJob{running(1, "alice", 300, 5, a100(4)), running(2, "alice", 100, 5, a100(4)),
				running(3, "bob", 200, 5, a100(4))},
			waiting: []WaitingJob{job(4, "carol", 900, 0, a100(8))},
			want: []Placed{{ID: 4, Place: 1, Preempt: []int64{2, 3},
				Reason: "waiting: preempting jobs 2 (priority 100) and 3 (priority 200) for room under the server limit"}},
		},
		{
			name:     "a job taken on the way that the room does not need is given back",
			limits:   Limits{Server: a100(8)},
			admitted: []AdmittedJob{running(1, "alice", 100, 5, a100(2)), running(2, "bob", 200, 5, a100(6))},
			waiting:  []WaitingJob{job(3, "carol", 900, 0, a100(6))},
			want: []Placed{{ID: 3, Place: 1, Preempt: []int64{2},
				Reason: "waiting: preempting job 2 (priority 200) for room under the server limit"}},
		},
		{
			name:     "not enough room even with every lower job gone: nobody is preempted",
			limits:   Limits{Server: a100(8)},
			admitted: []AdmittedJob{running(1, "alice", 100, 5, a100(4)), running(2, "bob", 950, 5, a100(4))},
			waiting:  []WaitingJob{job(3, "carol", 900, 0, a100(8))},
			want:     []Placed{{ID: 3, Place: 1, Reason: "waiting: the server's 8 A100 are in use; this job is next"}},
		},
		{
			name:     "a user limit: only that user's own jobs make room under it",
			limits:   Limits{Users: map[string]Amounts{"alice": {Jobs: 1}}},
			admitted: []AdmittedJob{running(1, "bob", 50, 5, nil), running(2, "alice", 100, 5, nil)},
			waiting:  []WaitingJob{job(3, "alice", 900, 0, nil)},
			want: []Placed{{ID: 3, Place: 1, Preempt: []int64{2},
				Reason: "waiting: preempting job 2 (priority 100) for room under alice's user limit"}},
		},
		{
			name: "a group limit: only its members' jobs make room under it",
			limits: Limits{Groups: []Group{{Name: "ml", Members: []string{"alice", "bob"},
				Limit: Amounts{Nodes: 2}}}},
			admitted: []AdmittedJob{running(1, "carol", 10, 5, nil), running(2, "bob", 100, 5, nil),
				running(3, "alice", 800, 5, nil)},
			waiting: []WaitingJob{job(4, "alice", 900, 0, nil)},
			want: []Placed{{ID: 4, Place: 1, Preempt: []int64{2},
				Reason: "waiting: preempting job 2 (priority 100) for room under the limit of group ml"}},
		},
		{
			name:   "victims still stopping: no new victim, the reason names them",
			limits: Limits{Server: Amounts{Jobs: 2}},
			admitted: []AdmittedJob{yielding(running(1, "alice", 100, 5, nil), 3),
				running(2, "alice", 100, 1, nil)},
			waiting: []WaitingJob{job(3, "bob", 900, 0, nil)},
			want: []Placed{{ID: 3, Place: 1,
				Reason: "waiting: preempting job 1 (priority 100) for room under the server limit"}},
		},
		{
			name:   "a job being stopped for one job is not taken for another",
			limits: Limits{Server: Amounts{Jobs: 2}},
			admitted: []AdmittedJob{yielding(running(1, "alice", 100, 5, nil), 3),
				running(2, "alice", 600, 1, nil)},
			waiting: []WaitingJob{job(3, "bob", 900, 0, nil), job(4, "carol", 800, 0, Amounts{VCPUs: 1})},
			want: []Placed{
				{ID: 3, Place: 1, Reason: "waiting: preempting job 1 (priority 100) for room under the server limit"},
				{ID: 4, Place: 2, Reason: "waiting: the server runs 2 of 2 jobs (server limit); 1 job ahead of this one"},
			},
		},
		{
			name:     "a victim is taken once per pass",
			limits:   Limits{Server: Amounts{GPU("A100"): 4, VCPUs: 4}},
			admitted: []AdmittedJob{running(1, "alice", 100, 5, Amounts{GPU("A100"): 4, VCPUs: 4})},
			waiting:  []WaitingJob{job(2, "bob", 900, 0, a100(4)), job(3, "carol", 800, 0, Amounts{VCPUs: 4})},
			want: []Placed{
				{ID: 2, Place: 1, Preempt: []int64{1}, Reason: "waiting: preempting job 1 (priority 100) for room under the server limit"},
				{ID: 3, Place: 2, Reason: "waiting: the server's 4 vCPUs are in use; 1 job ahead of this one"},
			},
		},
		{
			name:     "a job waiting behind another for the same room preempts nobody",
			limits:   Limits{Server: a100(8)},
			admitted: []AdmittedJob{running(1, "alice", 100, 5, a100(4)), running(2, "bob", 1000, 5, a100(4))},
			waiting:  []WaitingJob{job(3, "carol", 900, 0, a100(8)), job(4, "dave", 800, 0, a100(4))},
			want: []Placed{
				{ID: 3, Place: 1, Reason: "waiting: the server's 8 A100 are in use; this job is next"},
				{ID: 4, Place: 2, Reason: "waiting: the server's 8 A100 are in use; 1 job ahead of this one"},
			},
		},
		{
			name:   "a job being cancelled is nobody's victim",
			limits: Limits{Server: Amounts{Jobs: 2}},
			admitted: []AdmittedJob{{ID: 1, User: "alice", Priority: 10, Ask: Amounts{Jobs: 1}, AdmittedAt: t0, Cancelling: true},
				running(2, "alice", 100, 5, nil)},
			waiting: []WaitingJob{job(3, "bob", 900, 0, nil)},
			want: []Placed{{ID: 3, Place: 1, Preempt: []int64{2},
				Reason: "waiting: preempting job 2 (priority 100) for room under the server limit"}},
		},
		{
			name:     "a job that fits is admitted, preempting nobody",
			limits:   Limits{Server: Amounts{Jobs: 2}},
			admitted: []AdmittedJob{running(1, "alice", 100, 5, nil)},
			waiting:  []WaitingJob{job(2, "bob", 900, 0, nil)},
			want:     []Placed{{ID: 2, Admit: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Admit(AdmitInput{Now: t0, Limits: tt.limits, Waiting: tt.waiting, Admitted: tt.admitted,
				Held: HeldBy(tt.admitted), Preempt: !tt.off})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHeldBy(t *testing.T) {
	got := HeldBy([]AdmittedJob{running(1, "alice", 0, 0, a100(2)), running(2, "alice", 0, 0, nil), running(3, "bob", 0, 0, nil)})
	want := map[string]Amounts{"alice": {Jobs: 2, Nodes: 2, GPU("A100"): 2}, "bob": {Jobs: 1, Nodes: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HeldBy (-want +got):\n%s", diff)
	}
}

// BenchmarkAdmitPreempt is BenchmarkAdmit with preemption on and the held
// jobs one by one, at priorities 0-600: the first waiting jobs of higher
// priority pick victims, the rest wait behind them.
func BenchmarkAdmitPreempt(b *testing.B) {
	in := benchAdmitInput(10000, 100)
	in.Preempt = true
	id := int64(100000)
	for user, held := range in.Held {
		for k := range held[Jobs] {
			id++
			in.Admitted = append(in.Admitted, running(id, user, (k%7)*100, k, nil))
		}
	}
	in.Held = HeldBy(in.Admitted)
	b.ResetTimer()
	for range b.N {
		Admit(in)
	}
}
