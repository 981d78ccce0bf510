package smoke_tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
)

// A job preempted five times, reporting more progress in each attempt,
// succeeds under max_restarts_without_progress: 1; `jobs show` gives each
// attempt's progress, in text and JSON.
func TestPreemptedWithProgressSucceeds(t *testing.T) {
	e := newEnv(t)
	marks := filepath.Join(e.dir, "started")
	id := e.launch(e.write("train.yaml", `
name: train
resources:
  job_recovery:
    max_restarts_without_progress: 1
run: |
  echo $((SORTIE_ATTEMPT * 100)) >"$SORTIE_PROGRESS"
  touch `+marks+`-$SORTIE_ATTEMPT
  if [ "$SORTIE_ATTEMPT" -le 5 ]; then sleep 300; fi
`))
	for i := 1; i <= 5; i++ {
		waitFile(t, fmt.Sprintf("%s-%d", marks, i))
		want := int64(i * 100)
		e.waitFor(id, 30*time.Second, fmt.Sprintf("attempt %d's progress %d", i, want), func(d contract.JobDetail) bool {
			a := d.Attempts[len(d.Attempts)-1]
			return a.Attempt == i && a.Progress != nil && *a.Progress == want
		})
		e.must("local", "preempt", strconv.FormatInt(id, 10))
	}
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 6 || d.RecoveryCount != 5 {
		t.Fatalf("%d attempts, %d recoveries; want 6 and 5", len(d.Attempts), d.RecoveryCount)
	}
	for _, a := range d.Attempts {
		if want := int64(a.Attempt * 100); a.Progress == nil || *a.Progress != want {
			t.Errorf("attempt %d: progress %v, want %d", a.Attempt, a.Progress, want)
		}
	}
	text := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(text, "PROGRESS") || !strings.Contains(text, "  600  ") {
		t.Errorf("jobs show does not give the progress per attempt:\n%s", text)
	}
}

// A job that crashes without progress stops at the limit with the
// crash-loop reason, well within its max_restarts_on_errors.
func TestCrashLoopStopsAtTheLimit(t *testing.T) {
	e := newEnv(t)
	id := e.launch(e.write("crash.yaml", `
name: crash
resources:
  job_recovery:
    max_restarts_on_errors: 10
    max_restarts_without_progress: 2
run: exit 1
`))
	d := e.waitStatus(id, "FAILED")
	const want = "crash loop: 2 restarts without progress (no progress reported)"
	if d.FailureReason == nil || *d.FailureReason != want {
		t.Errorf("failure reason %q, want %q", deref(d.FailureReason), want)
	}
	if len(d.Attempts) != 3 {
		t.Errorf("%d attempts, want 3: the first and 2 restarts without progress", len(d.Attempts))
	}
}

// A negative limit is refused at launch, naming the field, the value and
// the fix.
func TestProgressLimitRefusedAtLaunch(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", "resources: {job_recovery: {max_restarts_without_progress: -1}}\nrun: x\n")
	r := e.run("jobs", "launch", f)
	const want = "resources.job_recovery.max_restarts_without_progress: -1 is negative; give how many restarts in a row may make no progress, 0 or more"
	if r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("launch: exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, want)
	}
}

// On sim: a task that fails without progress stops at the limit as a
// crash loop; the same task reporting more progress in each attempt
// (SIM_PROGRESS) runs until max_restarts_on_errors is spent instead.
func TestCrashLoopOnSim(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("sim:\n  run_time: 200ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	task := func(name, envs string) string {
		return e.write(name+".yaml", "name: "+name+`
resources:
  cloud: sim
  job_recovery: {max_restarts_on_errors: 4, max_restarts_without_progress: 1}
envs: {SIM_EXIT_CODE: "3"`+envs+`}
run: train
`)
	}
	loop := e.launch(task("loop", ""))
	going := e.launch(task("going", `, SIM_PROGRESS: "100"`))
	d := e.waitStatus(loop, "FAILED")
	if want := "crash loop: 1 restart without progress (no progress reported)"; deref(d.FailureReason) != want || len(d.Attempts) != 2 {
		t.Errorf("without progress: %d attempts, reason %q; want 2 and %q", len(d.Attempts), deref(d.FailureReason), want)
	}
	d = e.waitStatus(going, "FAILED")
	if len(d.Attempts) != 5 || !strings.Contains(deref(d.FailureReason), "no restarts left (max_restarts_on_errors 4)") {
		t.Errorf("with progress: %d attempts, reason %q; want 5, the error budget spent", len(d.Attempts), deref(d.FailureReason))
	}
	for _, a := range d.Attempts {
		if want := int64(a.Attempt * 100); a.Progress == nil || *a.Progress != want {
			t.Errorf("attempt %d: progress %v, want %d", a.Attempt, a.Progress, want)
		}
	}
}

// On sim: a job whose first five attempts are preempted (sim.preempt_rate
// 1, sim.preempt_attempts 5), each reporting more progress than the last
// (SIM_PROGRESS), succeeds under max_restarts_without_progress: 1, with
// each attempt's progress shown; without progress the same weather ends
// it as a crash loop after the limit.
func TestPreemptedWithProgressOnSim(t *testing.T) {
	e := newEnv(t)
	e.config("sim:\n  run_time: 2s\n  preempt_rate: 1\n  preempt_attempts: 5\n")
	task := func(name, envs string) string {
		return e.write(name+".yaml", "name: "+name+`
resources:
  cloud: sim
  use_spot: true
  job_recovery: {max_restarts_without_progress: 1}
envs: {`+envs+`}
run: train
`)
	}
	going := e.launch(task("going", `SIM_PROGRESS: "100"`))
	stuck := e.launch(task("stuck", ""))
	d := e.waitStatus(going, "SUCCEEDED")
	if len(d.Attempts) != 6 || d.RecoveryCount != 5 {
		t.Fatalf("with progress: %d attempts, %d recoveries; want 6 and 5", len(d.Attempts), d.RecoveryCount)
	}
	for _, a := range d.Attempts {
		if want := int64(a.Attempt * 100); a.Progress == nil || *a.Progress != want {
			t.Errorf("attempt %d: progress %v, want %d", a.Attempt, a.Progress, want)
		}
		if a.Attempt <= 5 && deref(a.Outcome) != "preempted" {
			t.Errorf("attempt %d: outcome %s, want preempted", a.Attempt, deref(a.Outcome))
		}
	}
	d = e.waitStatus(stuck, "FAILED")
	const want = "crash loop: 1 restart without progress (no progress reported)"
	if deref(d.FailureReason) != want || len(d.Attempts) != 2 {
		t.Errorf("without progress: %d attempts, reason %q; want 2 and %q", len(d.Attempts), deref(d.FailureReason), want)
	}
}
