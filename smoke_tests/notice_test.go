package smoke_tests

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkpointTask traps SIGTERM and writes a checkpoint marker at ckpt,
// where every attempt sees it; an attempt that finds one prints it and
// succeeds. It touches ready once the trap is set.
func checkpointTask(ckpt, ready string) string {
	return `
run: |
  if [ -f ` + ckpt + ` ]; then echo "resumed from: $(cat ` + ckpt + `)"; exit 0; fi
  trap 'echo "step 7 of attempt $SORTIE_ATTEMPT" > ` + ckpt + `; echo checkpointed; exit 143' TERM
  touch ` + ready + `
  while :; do sleep 0.05; done
`
}

// A notice on local: the agent sends SIGTERM, the task checkpoints, the
// replacement is asked for before the node goes, and the next attempt
// starts from the checkpoint, long before the notice's 30s are up.
func TestNoticeCheckpointLocal(t *testing.T) {
	e := newEnv(t)
	ckpt, ready := filepath.Join(e.dir, "ckpt"), filepath.Join(e.dir, "ready")
	id := e.launch(e.write("task.yaml", checkpointTask(ckpt, ready)))
	waitFile(t, ready)
	e.waitStatus(id, "RUNNING")
	given := time.Now()
	out := e.must("local", "preempt", strconv.FormatInt(id, 10), "--notice", "30s")
	if !strings.Contains(out.stdout, "Gave node 0 of sortie-") || !strings.Contains(out.stdout, "a preemption notice; it is taken away at ") {
		t.Errorf("local preempt --notice printed %q", out.stdout)
	}
	d := e.waitStatus(id, "SUCCEEDED")
	if took := time.Since(given); took > 25*time.Second {
		t.Errorf("the job took %s after the notice; the task stopped at once, so the node's 30s should not be waited for", took)
	}
	if len(d.Attempts) != 2 || d.RecoveryCount != 1 || d.RestartsOnErrors != 0 {
		t.Fatalf("attempts %d, recovery_count %d, restarts_on_errors %d; want 2, 1, 0", len(d.Attempts), d.RecoveryCount, d.RestartsOnErrors)
	}
	first := d.Attempts[0]
	if deref(first.Outcome) != "preempted" || first.Notice == nil || first.Notice.Kind != "preempted" || first.Notice.Source != "local" ||
		first.Notice.Deadline == nil || first.ReplacedAt == nil || first.HeadStartMS == nil || first.EndedAt == nil {
		t.Fatalf("first attempt: %+v (notice %+v)", first, first.Notice)
	}
	if got := first.Notice.Deadline.Sub(first.Notice.At); got != 30*time.Second {
		t.Errorf("notice deadline %s after it, want 30s", got)
	}
	// The second attempt's task started after the first ended.
	if second := d.Attempts[1]; !second.StartedAt.After(*first.ReplacedAt) {
		t.Errorf("replacement asked at %s, second attempt launched at %s", first.ReplacedAt, second.StartedAt)
	}
	logs := e.must("jobs", "logs", strconv.FormatInt(id, 10), "--attempt", "2").stdout
	if !strings.Contains(logs, "resumed from: step 7 of attempt 1") {
		t.Errorf("attempt 2 did not start from the checkpoint; its log:\n%s", logs)
	}
	logs1 := e.must("jobs", "logs", strconv.FormatInt(id, 10), "--attempt", "1").stdout
	if !strings.Contains(logs1, "checkpointed") {
		t.Errorf("attempt 1 did not checkpoint on SIGTERM; its log:\n%s", logs1)
	}
	show := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(show, "Preemption notices:") || !strings.Contains(show, "preempted  local") {
		t.Errorf("jobs show lacks the notice:\n%s", show)
	}
	e.waitNoClusters("after the job")
}

// noticeCase is one cloud's part of the notice scenario.
type noticeCase struct {
	resources string // lines of the task's resources (use_spot is added)
	kind      string // the notice's kind
	source    string // where the agent heard it
	// give makes the cloud give the notice; stop ends it, once the task
	// has checkpointed, so that the next attempt's agent hears none.
	give func() (stop func())
}

// noticeScenario runs a spot task that traps SIGTERM on a cloud: the
// cloud's notice reaches it through the node's agent, it checkpoints on a
// disk the attempts share (the test sshd's machine), the controller starts
// the replacement, and the next attempt starts from the checkpoint.
func noticeScenario(t *testing.T, e *env, c noticeCase) {
	t.Helper()
	ckpt, ready := filepath.Join(e.dir, "ckpt"), filepath.Join(e.dir, "ready")
	id := e.launch(e.write("task.yaml", "name: ckpt\nresources:\n"+c.resources+"  use_spot: true\n"+checkpointTask(ckpt, ready)))
	waitFile(t, ready)
	e.waitStatus(id, "RUNNING")
	stop := c.give()
	waitFile(t, ckpt)
	stop()
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 2 || d.RecoveryCount != 1 {
		t.Fatalf("%d attempts, recovery_count %d; want 2 and 1", len(d.Attempts), d.RecoveryCount)
	}
	first := d.Attempts[0]
	if deref(first.Outcome) != "preempted" || first.Notice == nil || first.Notice.Kind != c.kind || first.Notice.Source != c.source ||
		first.Notice.Deadline == nil || first.ReplacedAt == nil || first.HeadStartMS == nil || *first.HeadStartMS <= 0 {
		t.Fatalf("first attempt: outcome %s, reason %s, notice %+v, replaced %v, head start %v", deref(first.Outcome), deref(first.Reason),
			first.Notice, first.ReplacedAt, first.HeadStartMS)
	}
	if first.Cluster == d.Attempts[1].Cluster {
		t.Errorf("the replacement ran on the old cluster %s", first.Cluster)
	}
	logs := e.must("jobs", "logs", strconv.FormatInt(id, 10), "--attempt", "2").stdout
	if !strings.Contains(logs, "resumed from: step 7 of attempt 1") {
		t.Errorf("attempt 2 did not start from the checkpoint; its log:\n%s", logs)
	}
}
