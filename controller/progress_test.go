package controller

import (
	"context"
	"path/filepath"
	"testing"

	"sortie/controller/lifecycle"
	"sortie/provision/node"
	"sortie/strategy"
)

// A task that fails each time but reports more progress each time is
// restarted past max_restarts_without_progress; the progress it wrote to
// $SORTIE_PROGRESS is stored per attempt.
func TestProgressKeepsAFailingTaskGoing(t *testing.T) {
	ctx := context.Background()
	c := unsandboxedLocalController(t)
	count := node.Quote(filepath.Join(t.TempDir(), "count"))
	id := createJob(t, c, "resources: {cloud: local, job_recovery: {max_restarts_on_errors: 10, max_restarts_without_progress: 1}}\n"+
		"run: n=$(( $(cat "+count+" 2>/dev/null || echo 0) + 1 )); echo $n >"+count+"; echo $((n * 100)) >\"$SORTIE_PROGRESS\"; [ $n -ge 4 ] || exit 1\n")
	j := untilEnded(t, id, func() *Controller { return c })
	if j.Status != lifecycle.Succeeded {
		t.Fatalf("job %s (%q), want SUCCEEDED", j.Status, j.FailureReason)
	}
	as, err := c.Store.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 4 {
		t.Fatalf("%d attempts, want 4", len(as))
	}
	for i, a := range as {
		if want := int64(i+1) * 100; a.Progress == nil || *a.Progress != want {
			t.Errorf("attempt %d progress %v, want %d", a.Attempt, a.Progress, want)
		}
	}
}

// A task that crashes without progress stops at the limit, with the
// crash-loop reason naming the last progress and its attempt.
func TestCrashLoopEndsTheJob(t *testing.T) {
	ctx := context.Background()
	c := unsandboxedLocalController(t)
	count := node.Quote(filepath.Join(t.TempDir(), "count"))
	id := createJob(t, c, "resources: {cloud: local, job_recovery: {max_restarts_on_errors: 10, max_restarts_without_progress: 2}}\n"+
		"run: n=$(( $(cat "+count+" 2>/dev/null || echo 0) + 1 )); echo $n >"+count+"; if [ $n -eq 1 ]; then echo 41200 >\"$SORTIE_PROGRESS\"; fi; exit 1\n")
	j := untilEnded(t, id, func() *Controller { return c })
	const want = "crash loop: 2 restarts without progress (last progress 41200 at attempt 1)"
	if j.Status != lifecycle.Failed || j.FailureReason != want {
		t.Fatalf("job %s (%q), want FAILED (%q)", j.Status, j.FailureReason, want)
	}
	as, err := c.Store.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 4 {
		t.Fatalf("%d attempts, want 4: one with progress, then 2 restarts without and the one that ends it", len(as))
	}
	if last := as[len(as)-1]; last.Action != string(strategy.Fail) || last.Decision != want {
		t.Errorf("last attempt: action %s, decision %q", last.Action, last.Decision)
	}
}

// A task that writes the agent's progress record itself, unsandboxed, is
// not believed: the record's tag does not verify.
func TestForgedProgressIsNoProgress(t *testing.T) {
	ctx := context.Background()
	c := unsandboxedLocalController(t)
	id := createJob(t, c, "resources: {cloud: local}\n"+
		"run: mkdir -p \"$SORTIE_NODE_DIR/record\"; printf '999999 00ff\\n' >\"$SORTIE_NODE_DIR/record/progress\"; sleep 3\n")
	j := untilEnded(t, id, func() *Controller { return c })
	if j.Status != lifecycle.Succeeded {
		t.Fatalf("job %s (%q), want SUCCEEDED", j.Status, j.FailureReason)
	}
	as, err := c.Store.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if as[0].Progress != nil {
		t.Errorf("progress %d from a record the task wrote, want none", *as[0].Progress)
	}
}
