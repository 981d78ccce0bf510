package storm

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision"
	"sortie/provision/sim"
)

func codes(cs ...int) []*int {
	var out []*int
	for _, c := range cs {
		if c < 0 {
			out = append(out, nil)
		} else {
			out = append(out, new(c))
		}
	}
	return out
}

func ended(n int, cluster, outcome, action string, cs []*int) attempt {
	return attempt{Attempt: n, Cluster: cluster, State: "ended", Outcome: outcome, Codes: cs, Action: action}
}

// The sim's plan takes an attempt stopped for a job of higher priority
// from the store: the next attempt is the plan's next number on a fresh
// cluster, and the stopped task's codes must still be ones it could have.
func TestCheckSimExpectedPriorityPreemption(t *testing.T) {
	cl := func(id int64, n int) string { return provision.ClusterName(id, 0, n) }
	// Every task exits 1 on its first attempt (one budgeted restart), 0 after.
	cfg := sim.Config{ExitCodes: []sim.ExitRule{{Code: 1, Share: 1, Attempt: 1}}}
	cases := []struct {
		name     string
		limit    int
		attempts []attempt
		status   string
		problem  string // "" when none
		preempts int
		between  int
	}{
		{name: "stopped while running, then runs its plan's attempt 2", limit: 4, status: "SUCCEEDED", preempts: 1,
			attempts: []attempt{
				ended(1, cl(1, 1), "preempted_by_priority", "requeue", codes(143)),
				ended(2, cl(1, 2), "succeeded", "succeed", codes(0)),
			}},
		{name: "stopped before it started, or after it ended with its own code", limit: 4, status: "SUCCEEDED", preempts: 2,
			attempts: []attempt{
				ended(1, cl(1, 1), "preempted_by_priority", "requeue", nil),
				ended(2, cl(1, 2), "preempted_by_priority", "requeue", codes(0)),
				ended(3, cl(1, 3), "succeeded", "succeed", codes(0)),
			}},
		{name: "a code the task never chose", limit: 4, status: "SUCCEEDED", preempts: 1, problem: "attempt 1 on",
			attempts: []attempt{
				ended(1, cl(1, 1), "preempted_by_priority", "requeue", codes(7)),
				ended(2, cl(1, 2), "succeeded", "succeed", codes(0)),
			}},
		{name: "no limit: no preemption by priority is expected", limit: 0, status: "SUCCEEDED", problem: "attempt 1 on",
			attempts: []attempt{
				ended(1, cl(1, 1), "preempted_by_priority", "requeue", codes(143)),
				ended(2, cl(1, 2), "succeeded", "succeed", codes(0)),
			}},
		{name: "restart on the kept cluster", limit: 4, status: "SUCCEEDED",
			attempts: []attempt{
				ended(1, cl(1, 1), "user_failure", "restart", codes(1)),
				ended(2, cl(1, 1), "succeeded", "succeed", codes(0)),
			}},
		{name: "requeued between a restart's attempts: a fresh cluster", limit: 4, status: "SUCCEEDED", between: 1,
			attempts: []attempt{
				ended(1, cl(1, 1), "user_failure", "restart", codes(1)),
				ended(2, cl(1, 2), "succeeded", "succeed", codes(0)),
			}},
		{name: "without a limit a restart keeps its cluster", limit: 0, status: "SUCCEEDED", problem: "attempt 2 on",
			attempts: []attempt{
				ended(1, cl(1, 1), "user_failure", "restart", codes(1)),
				ended(2, cl(1, 2), "succeeded", "succeed", codes(0)),
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Limit: tc.limit}
			starts := map[string]int{}
			for _, a := range tc.attempts {
				if a.Outcome != "preempted_by_priority" {
					starts[sim.StartKey(1, 0, a.Attempt, 0)] = 1
				}
			}
			r.checkSimExpected(map[int64]*job{1: {ID: 1, Status: tc.status, Attempts: tc.attempts}}, cfg, starts)
			got := strings.Join(r.Problems, "; ")
			if tc.problem == "" && got != "" {
				t.Errorf("problems: %s", got)
			}
			if tc.problem != "" && (r.Mismatched != 1 || !strings.Contains(got, tc.problem)) {
				t.Errorf("mismatched %d, problems %q; want one naming %q", r.Mismatched, got, tc.problem)
			}
			if r.PriorityPreempts != tc.preempts || r.RequeuedBetween != tc.between {
				t.Errorf("preempts by priority %d, requeued between %d; want %d and %d", r.PriorityPreempts, r.RequeuedBetween, tc.preempts, tc.between)
			}
		})
	}
}

// The watcher counts as held what admission does (an active job that left
// PENDING or was admitted) and names each sample over the limit.
func TestWatcherOverLimit(t *testing.T) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE jobs (id INTEGER PRIMARY KEY, status TEXT, admitted_at TEXT);
		INSERT INTO jobs (status, admitted_at) VALUES ('RUNNING', 'x'), ('STARTING', NULL), ('PENDING', 'x'),
			('PENDING', NULL), ('SUCCEEDED', 'x'), ('CANCELLED', NULL)`); err != nil {
		t.Fatal(err)
	}
	w := newWatcher(db, 3)
	w.sample(ctx)
	r := &Result{}
	r.checkWatched(w)
	if r.OverLimit != 0 || r.MostHeld != 3 {
		t.Fatalf("over limit %d, held at most %d; want 0 and 3 (problems %v)", r.OverLimit, r.MostHeld, r.Problems)
	}
	if _, err := db.ExecContext(ctx, `UPDATE jobs SET admitted_at = 'x' WHERE status = 'PENDING'`); err != nil {
		t.Fatal(err)
	}
	w.sample(ctx)
	r = &Result{}
	r.checkWatched(w)
	if r.OverLimit != 1 || r.MostHeld != 4 || r.OK() || !strings.Contains(strings.Join(r.Problems, ";"), "4 jobs held a place at once, over the server limit of 3") {
		t.Fatalf("over limit %d, held at most %d, problems %v; want one sample of 4 over 3", r.OverLimit, r.MostHeld, r.Problems)
	}
}
