package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/contract"
)

// COST is shown when some job's cost is known: "$12.40", "~$3.10" for an
// estimate, "-" for a job whose cost is not known.
func TestQueueCostColumn(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dollars := func(d float64) *float64 { return &d }
	jobs := []contract.JobView{
		{ID: 3, Name: "a", Status: "RUNNING", NumTasks: 1, SubmittedAt: now.Add(-time.Hour), Cost: dollars(3.1), CostEstimate: true},
		{ID: 2, Name: "b", Status: "SUCCEEDED", NumTasks: 1, SubmittedAt: now.Add(-time.Hour), Cost: dollars(12.4)},
		{ID: 1, Name: "c", Status: "PENDING", NumTasks: 1, SubmittedAt: now.Add(-time.Hour)},
	}
	f, out, _ := testFactory()
	if err := printQueue(f, jobs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	want := []string{"ID NAME RESOURCES LOCATION SUBMITTED DURATION COST #RECOV STATUS EXIT",
		"3 a - - 1h ago - ~$3.10 0 RUNNING -", "2 b - - 1h ago - $12.40 0 SUCCEEDED -", "1 c - - 1h ago - - 0 PENDING -"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// No cost known: no column.
	f, out, _ = testFactory()
	if err := printQueue(f, jobs[2:]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "COST") {
		t.Errorf("a COST column with no cost known:\n%s", out)
	}
	// Jobs on prices left at zero (local's default) cost nothing worth a
	// column.
	f, out, _ = testFactory()
	if err := printQueue(f, []contract.JobView{{ID: 4, Name: "d", Status: "SUCCEEDED", NumTasks: 1, SubmittedAt: now, Cost: dollars(0)}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "COST") {
		t.Errorf("a COST column for jobs that cost $0:\n%s", out)
	}
}

// `jobs show` of a job that cost nothing (local, prices at zero) has no
// Cost line and no COST column.
func TestShowNoCostAtZero(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	zero := 0.0
	d := &contract.JobDetail{JobView: contract.JobView{ID: 2, Name: "train", Status: "SUCCEEDED", NumTasks: 1, SubmittedAt: now, Cost: &zero},
		Attempts: []contract.AttemptView{{Task: 0, Attempt: 1, State: "ended", StartedAt: now, Cost: &zero}},
	}
	f, out, _ := testFactory()
	if err := printShow(f, d); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Cost:") || strings.Contains(out.String(), "COST") {
		t.Errorf("show gives a cost of $0:\n%s", out)
	}
}

// `jobs show` gives each attempt's cost, the job's, and the retry chain's.
func TestShowCosts(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dollars := func(d float64) *float64 { return &d }
	orig := int64(1)
	d := &contract.JobDetail{JobView: contract.JobView{ID: 2, Name: "train", Status: "SUCCEEDED", NumTasks: 1, SubmittedAt: now,
		RetryOf: &orig, Cost: dollars(4.2)},
		Attempts: []contract.AttemptView{
			{Task: 0, Attempt: 1, State: "ended", StartedAt: now, Cost: dollars(1.2)},
			{Task: 0, Attempt: 2, State: "ended", StartedAt: now, Cost: dollars(3), CostEstimate: true},
		},
		Chain:     []contract.JobView{{ID: 1, Status: "FAILED"}, {ID: 2, Status: "SUCCEEDED", RetryOf: &orig}},
		ChainCost: dollars(10.5), ChainCostEstimate: true,
	}
	f, out, _ := testFactory()
	if err := printShow(f, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Cost:          $4.20   Retry chain: ~$10.50", "COST", "$1.20", "~$3.00"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}
