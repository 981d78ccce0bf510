package smoke_tests

import (
	"sortie/controller/contract"
	"strconv"
	"strings"
	"testing"
	"time"
)

// max_duration stops a task that runs past it: SIGTERM reaches the task
// (its log says so), the job ends FAILED naming the limit, its cluster is
// torn down, and its inputs are not recorded as a known failure.
func TestMaxDurationStopsALongTask(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", `
resources: {job_recovery: {max_duration: 8s, max_restarts_on_errors: 3}}
run: |
  trap 'echo got TERM; exit 143' TERM
  echo started
  sleep 300 & wait
`)
	id := e.launch(f)
	e.waitStatus(id, "RUNNING")
	d := e.waitStatus(id, "FAILED")
	if deref(d.FailureReason) != "max_duration 8s exceeded" {
		t.Errorf("failure reason %q, want %q", deref(d.FailureReason), "max_duration 8s exceeded")
	}
	if len(d.Attempts) != 1 || deref(d.Attempts[0].Outcome) != "timed_out" || deref(d.Attempts[0].Action) != "fail" {
		t.Fatalf("attempts %+v, want one timed_out, fail", d.Attempts)
	}
	if took := d.EndedAt.Sub(d.SubmittedAt); took < 8*time.Second || took > 40*time.Second {
		t.Errorf("the job ended %s after its submission; want a little over 8s", took)
	}
	// The log is kept again once the stop has run, which follows the
	// recorded end.
	deadline := time.Now().Add(15 * time.Second)
	for logs := ""; !strings.Contains(logs, "got TERM"); {
		if time.Now().After(deadline) {
			t.Fatalf("logs %q: the task never saw SIGTERM", logs)
		}
		time.Sleep(50 * time.Millisecond)
		logs = e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout
	}
	e.waitNoClusters("after max_duration")
	if out := e.must("jobs", "failures").stdout; strings.Contains(out, strconv.FormatInt(id, 10)+" ") {
		t.Errorf("jobs failures lists job %d, which failed by a limit:\n%s", id, out)
	}
	// The same file launches again: it is not a known failure.
	again := e.launch(f)
	e.must("jobs", "cancel", strconv.FormatInt(again, 10))
	e.waitStatus(again, "CANCELLED")
}

// job_recovery: none ends the job FAILED at a preemption instead of
// recovering; max_recoveries ends it at the preemption past the limit.
func TestNoRecoveryAndMaxRecoveries(t *testing.T) {
	for _, tc := range []struct {
		name, recovery string
		preemptions    int
		reason         string
	}{
		{"none", "none", 1, "job_recovery is NONE, not recovering"},
		{"NONE as a strategy", "{strategy: NONE}", 1, "job_recovery is NONE, not recovering"},
		{"max_recoveries 1", "{max_recoveries: 1}", 2, "no recoveries left (max_recoveries 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			f := e.write("task.yaml", "resources: {job_recovery: "+tc.recovery+"}\nrun: sleep 300\n")
			id := e.launch(f)
			for n := 1; n <= tc.preemptions; n++ {
				e.waitFor(id, 60*time.Second, "attempt "+strconv.Itoa(n)+" running", func(d contract.JobDetail) bool {
					return d.Status == "RUNNING" && len(d.Attempts) == n
				})
				e.must("local", "preempt", strconv.FormatInt(id, 10))
			}
			d := e.waitStatus(id, "FAILED")
			if !strings.Contains(deref(d.FailureReason), tc.reason) || !strings.HasPrefix(deref(d.FailureReason), "preemption in ") {
				t.Errorf("failure reason %q, want a preemption and %q", deref(d.FailureReason), tc.reason)
			}
			if len(d.Attempts) != tc.preemptions || d.RecoveryCount != tc.preemptions-1 {
				t.Errorf("%d attempts, recovery_count %d; want %d and %d", len(d.Attempts), d.RecoveryCount, tc.preemptions, tc.preemptions-1)
			}
			e.waitNoClusters("after the job failed")
		})
	}
}

// Bad limits are refused at launch, naming the field, and nothing is stored.
func TestBadRecoveryLimitsAreRefused(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", "resources: {job_recovery: {max_duration: -1h, max_recoveries: -1}}\nrun: x\n")
	r := e.run("jobs", "launch", "-d", f)
	if r.code != 2 || !strings.Contains(r.stderr, `resources.job_recovery.max_duration: "-1h" is not positive`) ||
		!strings.Contains(r.stderr, "resources.job_recovery.max_recoveries: -1 is negative") {
		t.Errorf("exit %d, stderr %q; want 2 naming both fields", r.code, r.stderr)
	}
	if jobs := e.queue("-a"); len(jobs) != 0 {
		t.Errorf("jobs stored: %+v", jobs)
	}
}
