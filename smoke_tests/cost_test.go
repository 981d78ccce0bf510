package smoke_tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A job on local, priced from config.yaml ($36 a node-hour), with a
// max_cost that pays for its first attempt but not for an hour of a
// second: the first attempt fails, and instead of restarting the job ends
// FAILED saying what it spent, its cost in `jobs show -o json` and the
// queue.
func TestMaxCostStopsAJob(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("local:\n  prices:\n    node_hour: 36\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := e.launch(e.write("task.yaml", "resources:\n  cloud: local\n  job_recovery: {max_cost: 36.02, max_restarts_on_errors: 3}\nrun: sleep 3; exit 1\n"))
	d := e.waitStatus(id, "FAILED")
	reason := deref(d.FailureReason)
	if !strings.HasPrefix(reason, "spent $0.0") || !strings.Contains(reason, " of max_cost $36.02; the next attempt would cost $36.00/h, more than the $") {
		t.Fatalf("failure reason %q, want what was spent of max_cost", reason)
	}
	if len(d.Attempts) != 1 || d.Attempts[0].Cost == nil {
		t.Fatalf("attempts %d, the first's cost %v; want one attempt, priced", len(d.Attempts), d.Attempts[0].Cost)
	}
	// Three seconds and more at $0.01 a second, from the launch request.
	if c := *d.Attempts[0].Cost; c < 0.03 || c > 0.5 {
		t.Errorf("the attempt cost $%.4f, want the price of its few seconds", c)
	}
	if d.Cost == nil || *d.Cost != *d.Attempts[0].Cost || d.ChainCost == nil || *d.ChainCost != *d.Cost {
		t.Errorf("job cost %v, chain cost %v; want the attempt's %v", d.Cost, d.ChainCost, *d.Attempts[0].Cost)
	}
	q := e.must("jobs", "queue", "-a").stdout
	if !strings.Contains(q, "COST") || !strings.Contains(q, "$0.0") {
		t.Errorf("the queue does not show the cost:\n%s", q)
	}
	show := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(show, "Cost:          $0.0") {
		t.Errorf("jobs show does not say what the job cost:\n%s", show)
	}
}
