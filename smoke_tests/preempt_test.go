package smoke_tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// preemptTasks writes a priority-100 task that traps SIGTERM (saying so
// in a file) on its first run and succeeds on its next, and a
// priority-900 task that succeeds at once.
func preemptTasks(e *env) (low, high, marks string) {
	marks = filepath.Join(e.dir, "marks")
	if err := os.MkdirAll(marks, 0o755); err != nil {
		e.t.Fatal(err)
	}
	low = e.write("low.yaml", "name: low\npriority: 100\n"+
		"resources: {cloud: local, job_recovery: {max_restarts_on_errors: 0, max_recoveries: 1, termination_grace: 20s}}\n"+
		"run: |\n"+
		"  if [ -e "+marks+"/first ]; then echo second run; exit 0; fi\n"+
		"  trap 'echo got TERM; touch "+marks+"/termed; exit 143' TERM\n"+
		"  touch "+marks+"/first\n"+
		"  sleep 300 & wait\n")
	high = e.write("high.yaml", "name: high\npriority: 900\nresources: {cloud: local}\nrun: echo high\n")
	return low, high, marks
}

// waitMark waits for a file a task makes.
func waitMark(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not made within 60s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A server limit of one running job with limits.preemption:
// lower_priority. A priority-100 job runs; a priority-900 job is
// launched: the low one gets SIGTERM (its trap writes a file), its attempt
// ends preempted by priority naming the high job, and it waits again; the
// high one runs and succeeds; then the low one runs again and succeeds,
// its restart budget (max_restarts_on_errors: 0, max_recoveries: 1)
// untouched.
func TestPreemptionByPriority(t *testing.T) {
	e := newEnv(t)
	e.config("limits:\n  server: {running_jobs: 1}\n  preemption: lower_priority\n")
	lowFile, highFile, marks := preemptTasks(e)
	low := e.launch(lowFile)
	e.waitStatus(low, lifecycle.Running)
	waitMark(t, filepath.Join(marks, "first"))
	high := e.launch(highFile)

	h := e.waitStatus(high, lifecycle.Succeeded)
	d := e.waitStatus(low, lifecycle.Succeeded)
	if _, err := os.Stat(filepath.Join(marks, "termed")); err != nil {
		t.Errorf("the low job's task never got SIGTERM: %v", err)
	}
	if len(d.Attempts) != 2 {
		t.Fatalf("low job has %d attempts, want 2 (preempted, then succeeded)", len(d.Attempts))
	}
	first, second := d.Attempts[0], d.Attempts[1]
	want := "preempted by priority: job " + strconv.FormatInt(high, 10) + " (priority 900) takes its place under the server limit"
	if str(first.Outcome) != "preempted_by_priority" || str(first.Action) != "requeue" || str(first.Reason) != want {
		t.Errorf("first attempt: outcome %q action %q reason %q; want preempted_by_priority, requeue, %q",
			str(first.Outcome), str(first.Action), str(first.Reason), want)
	}
	if c := codes(d); len(c) != 2 || len(c[0]) != 1 || c[0][0] != 143 {
		t.Errorf("exit codes %v, want 143 first: what the task did with its SIGTERM", c)
	}
	if str(second.Outcome) != "succeeded" {
		t.Errorf("second attempt %q, want succeeded", str(second.Outcome))
	}
	if d.RestartsOnErrors != 0 || d.RecoveryCount != 0 {
		t.Errorf("low job spent restarts %d, recoveries %d; want its budget untouched", d.RestartsOnErrors, d.RecoveryCount)
	}
	// The two never ran at once: the high one started once the low one's
	// attempt had ended, and the low one ran again after the high one.
	if h.StartedAt == nil || first.EndedAt == nil || h.StartedAt.Before(*first.EndedAt) {
		t.Errorf("high job started %v, before the low job's preempted attempt ended %v", h.StartedAt, first.EndedAt)
	}
	if h.EndedAt == nil || second.StartedAt.Before(*h.EndedAt) {
		t.Errorf("low job's second attempt started %v, before the high job ended %v", second.StartedAt, h.EndedAt)
	}
	out := e.must("jobs", "show", strconv.FormatInt(low, 10)).stdout
	if !strings.Contains(out, "preempted_by_priority") || !strings.Contains(out, want) {
		t.Errorf("jobs show says nothing of the preemption:\n%s", out)
	}
	e.waitNoClusters("after both jobs ended")
}

// Without limits.preemption nothing is preempted: the priority-900 job
// waits for the limit while the priority-100 one runs on.
func TestPreemptionOffPreemptsNothing(t *testing.T) {
	e := newEnv(t)
	e.config("limits:\n  server: {running_jobs: 1}\n")
	lowFile, highFile, marks := preemptTasks(e)
	low := e.launch(lowFile)
	e.waitStatus(low, lifecycle.Running)
	waitMark(t, filepath.Join(marks, "first"))
	high := e.launch(highFile)
	want := "waiting: the server runs 1 of 1 jobs (server limit); this job is next"
	e.waitFor(high, 30*time.Second, "the high job waiting for the limit", func(d contract.JobDetail) bool {
		return d.WaitReason != nil && *d.WaitReason == want
	})
	// Many admission passes (one every 100ms) later, nothing moved.
	time.Sleep(2 * time.Second)
	if d := e.show(low); d.Status != lifecycle.Running || len(d.Attempts) != 1 {
		t.Errorf("low job %s with %d attempts, want it RUNNING its first", d.Status, len(d.Attempts))
	}
	if d := e.show(high); d.Status != lifecycle.Pending || d.WaitReason == nil || *d.WaitReason != want {
		t.Errorf("high job %s waiting %v, want PENDING, %q", d.Status, d.WaitReason, want)
	}
	if _, err := os.Stat(filepath.Join(marks, "termed")); err == nil {
		t.Error("the low job's task got SIGTERM")
	}
	e.must("jobs", "cancel", strconv.FormatInt(low, 10), strconv.FormatInt(high, 10), "-y")
}

// str is *s, "" for nil.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
