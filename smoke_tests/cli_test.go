package smoke_tests

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestLaunchFollowsLogsAndExitsWithTheOutcome(t *testing.T) {
	e := newEnv(t)
	ok := e.write("ok.yaml", `
resources: {job_recovery: {recover_on_exit_codes: [29]}}
run: |
  echo "hello from attempt $SORTIE_ATTEMPT"
  [ "$SORTIE_ATTEMPT" = 2 ] || exit 29
`)
	r := e.run("jobs", "launch", ok)
	if r.code != 0 {
		t.Fatalf("launch of a job that succeeds: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"hello from attempt 1", "hello from attempt 2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("followed logs lack %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "ended SUCCEEDED") {
		t.Errorf("stderr: %s", r.stderr)
	}
	bad := e.write("bad.yaml", "run: echo failing; exit 3\n")
	r = e.run("jobs", "launch", bad)
	if r.code != 1 || !strings.Contains(r.stdout, "failing") || !strings.Contains(r.stderr, "ended FAILED") {
		t.Errorf("launch of a failing job: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

func TestCancelByNameAndAll(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", "run: sleep 300\n")
	a := e.launch(f, "-n", "sweep-1")
	b := e.launch(f, "-n", "sweep-2", "--env", "X=2")
	c := e.launch(f, "-n", "other", "--env", "X=3")
	e.waitStatus(a, "RUNNING")
	// Two jobs match: without -y, and with no terminal to ask on, nothing
	// is cancelled.
	if r := e.run("jobs", "cancel", "-n", "sweep-*"); r.code != 2 || !strings.Contains(r.stderr, "pass -y") {
		t.Errorf("cancel of two jobs without -y: exit %d, stderr %q; want 2 and to be told to pass -y", r.code, r.stderr)
	}
	dry := e.must("jobs", "cancel", "-n", "sweep-*", "--status", "RUNNING,PENDING,STARTING", "--since", "1h", "--dry-run")
	if !strings.Contains(dry.stdout, "sweep-1") || !strings.Contains(dry.stdout, "sweep-2") || strings.Contains(dry.stdout, "other") ||
		!strings.Contains(dry.stderr, "Would cancel 2 job(s)") {
		t.Errorf("--dry-run:\n%s%s", dry.stderr, dry.stdout)
	}
	if d := e.show(a); d.Status != "RUNNING" {
		t.Errorf("job %d is %s after a refused cancel and a dry run, want RUNNING", a, d.Status)
	}
	out := e.must("jobs", "cancel", "-n", "sweep-*", "-y").stdout
	if !strings.Contains(out, "job "+strconv.FormatInt(a, 10)) || !strings.Contains(out, "job "+strconv.FormatInt(b, 10)) || strings.Contains(out, "job "+strconv.FormatInt(c, 10)) {
		t.Errorf("cancel -n sweep-*: %s", out)
	}
	e.waitStatus(a, "CANCELLED")
	e.waitStatus(b, "CANCELLED")
	if d := e.show(c); isTerminal(d.Status) {
		t.Errorf("job %d was cancelled too: %s", c, d.Status)
	}
	e.must("jobs", "cancel", "--all")
	e.waitStatus(c, "CANCELLED")
	if q := e.queue(); len(q) != 3 {
		t.Errorf("default queue: %d jobs", len(q))
	}
	if q := e.queue("--status", "RUNNING"); len(q) != 0 {
		t.Errorf("running after cancel --all: %+v", q)
	}
	if r := e.run("jobs", "show", "999"); r.code != 1 || !strings.Contains(r.stderr, "no such job") {
		t.Errorf("show of an unknown job: exit %d %s", r.code, r.stderr)
	}
}

func TestCancelDuringRestartBackoffTearsDownTheKeptCluster(t *testing.T) {
	e := newEnv(t, "SORTIE_RESTART_BACKOFF_INITIAL=60s", "SORTIE_RESTART_BACKOFF_MAX=60s")
	f := e.write("task.yaml", "resources: {job_recovery: {max_restarts_on_errors: 3}}\nrun: exit 1\n")
	id := e.launch(f)
	e.waitStatus(id, "RECOVERING")
	if ents, _ := os.ReadDir(e.home + "/local/clusters"); len(ents) != 1 {
		t.Fatalf("want the cluster kept for the restart, found %d", len(ents))
	}
	e.must("jobs", "cancel", strconv.FormatInt(id, 10))
	e.waitStatus(id, "CANCELLED")
	e.waitNoClusters("after the cancel")
}
