package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// When max_duration runs out the task on every node is stopped as a cancel
// stops it (SIGTERM first, so it can say so in its log), its logs are kept,
// and the job ends FAILED with the limit as its reason. The clock is the
// controller's: nothing waits for the limit for real.
func TestMaxDurationStopsTheTaskOnItsNodes(t *testing.T) {
	ctx := context.Background()
	// The task marks its trap in the node directory, out of a sandbox's
	// reach.
	c := unsandboxedLocalController(t)
	id := createJob(t, c, "num_nodes: 2\nresources: {cloud: local, job_recovery: {max_duration: 12h, max_restarts_on_errors: 5}}\n"+
		"run: trap 'echo got TERM; exit 143' TERM; touch \"$SORTIE_NODE_DIR/trapped\"; sleep 300 & wait\n")
	j, _ := c.Store.Job(ctx, id)
	c.Now = func() time.Time { return j.SubmittedAt.Add(time.Minute) }
	a := untilRunning(t, c, id)
	rs := runners(t, c, a)
	for _, r := range rs {
		waitFor(t, r, "the task running", running)
		// The trap is set before the stop comes: a TERM that reaches bash
		// before its trap kills it without a word.
		waitFile(t, filepath.Join(r.Dir(), "trapped"))
	}
	c.Now = func() time.Time { return j.SubmittedAt.Add(12 * time.Hour) }
	j, _ = step(t, c, id)
	if j.Status != lifecycle.Failed || j.FailureReason != "max_duration 12h exceeded" {
		t.Fatalf("job %s (%q), want FAILED (max_duration 12h exceeded)", j.Status, j.FailureReason)
	}
	as, _ := c.Store.Attempts(ctx, id)
	if len(as) != 1 || as[0].Outcome != string(strategy.TimedOut) || as[0].Action != string(strategy.Fail) {
		t.Fatalf("attempts %+v, want one timed_out, failed", as)
	}
	// The logs kept on the controller, read after the stop.
	for rank := range rs {
		b, err := os.ReadFile(home.NodeLog(c.Config.Home, id, 0, 1, rank))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "got TERM") {
			t.Errorf("node %d log %q: the task never saw SIGTERM", rank, b)
		}
	}
}

// waitFile waits for a file a task makes.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not made within 15s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
