package smoke_tests

import (
	"strings"
	"testing"
)

// A launch that follows its job says each step on stderr as the
// controller records it, between the logs on stdout: where it is placed,
// the instances asked for, the cluster up, setup and run, each attempt's
// end and decision, and the wait before the restart.
func TestLaunchFollowSaysEachStep(t *testing.T) {
	// A back-off much longer than a follow's look (500ms), so that the
	// wait is seen before it is over even on a busy machine.
	e := newEnv(t, "SORTIE_RESTART_BACKOFF_INITIAL=5s")
	f := e.write("task.yaml", `
name: steps
resources:
  job_recovery:
    max_restarts_on_errors: 1
setup: echo preparing
run: |
  echo "attempt $SORTIE_ATTEMPT"
  if [ "$SORTIE_ATTEMPT" -lt 2 ]; then exit 1; fi
`)
	r := e.run("jobs", "launch", f)
	if r.code != 0 {
		t.Fatalf("launch: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "Attempt 1") {
		t.Errorf("steps on stdout: %s", r.stdout)
	}
	want := []string{
		"Attempt 1: placement chosen: local/local/local-a, on-demand.\n",
		"Attempt 1: requesting 1 instance there for cluster ",
		"Attempt 1: cluster sortie-1-0-1 is up (",
		"Attempt 1: setup started on 1 node.\n",
		"Attempt 1 ended: user_failure, exit codes 1 (node 0 exited 1); ",
		"Restarting in ",
		"(back-off 1; restarts on error left 0 of 1).\n",
		"Attempt 2: the task starts again on cluster sortie-1-0-1 (",
		"Attempt 2 ended: succeeded, exit codes 0",
		"Job 1 ended SUCCEEDED",
	}
	rest := r.stderr
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("stderr lacks %q after what came before; stderr:\n%s", w, r.stderr)
		}
		rest = rest[i+len(w):]
	}
}
