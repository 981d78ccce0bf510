package smoke_tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/provision/cloudtest"
)

// clusterDir is where the local provider keeps job id's first cluster.
func clusterDir(e *env, id int64) string {
	return filepath.Join(e.home, "local", "clusters", "sortie-"+strconv.FormatInt(id, 10)+"-0-1")
}

// waitClusterGone waits until the local cluster's directory is removed.
func waitClusterGone(t *testing.T, dir string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there after %s", dir, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A failed job keeps its cluster (keep_on_failure): jobs ssh sees the
// failed attempt's files and environment, says why it cannot go where
// nothing is kept, and jobs release tears the cluster down.
func TestKeepOnFailureLocal(t *testing.T) {
	e := newEnv(t)
	f := e.write("fail.yaml", `
name: broken
resources: {job_recovery: {keep_on_failure: 10m}}
envs: {MSG: from the failure}
run: |
  echo "$MSG" >marker
  exit 3
`)
	id := e.launch(f)
	sid := strconv.FormatInt(id, 10)
	d := e.waitStatus(id, "FAILED")
	a := d.Attempts[0]
	if a.KeptUntil == nil || a.KeptUntil.Sub(*a.EndedAt) < 9*time.Minute || a.ReleasedAt != nil {
		t.Fatalf("attempt kept until %v (ended %v), released %v; want kept 10m", a.KeptUntil, a.EndedAt, a.ReleasedAt)
	}
	if out := e.must("jobs", "show", sid).stdout; !strings.Contains(out, "kept until") || !strings.Contains(out, "sortie jobs ssh "+sid) {
		t.Errorf("show does not say the cluster is kept:\n%s", out)
	}
	// Well after the failure the cluster is still there: the controller
	// does not tear it down.
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(clusterDir(e, id)); err != nil {
		t.Fatalf("the kept cluster is gone: %v", err)
	}

	r := e.run("jobs", "ssh", sid, "--", "cat", "marker")
	if r.code != 0 || r.stdout != "from the failure\n" {
		t.Errorf("jobs ssh -- cat marker: exit %d, out %q, err %q", r.code, r.stdout, r.stderr)
	}
	r = e.run("jobs", "ssh", sid, "--", "sh", "-c", `echo "$MSG/$SORTIE_JOB_ID/$SORTIE_ATTEMPT"; exit 7`)
	if want := "from the failure/" + sid + "/1\n"; r.code != 7 || r.stdout != want {
		t.Errorf("jobs ssh env: exit %d, out %q; want 7, %q", r.code, r.stdout, want)
	}
	if r := e.run("jobs", "ssh", sid, "--node", "1", "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--node 1: job "+sid+"'s cluster") {
		t.Errorf("--node 1: exit %d, %q; want 2 and the range", r.code, r.stderr)
	}

	// A running job has nothing kept yet.
	run := e.launch(e.write("run.yaml", "name: runs\nrun: sleep 300\n"))
	e.waitStatus(run, "RUNNING")
	if r := e.run("jobs", "ssh", strconv.FormatInt(run, 10), "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "still running") ||
		!strings.Contains(r.stderr, "sortie jobs logs "+strconv.FormatInt(run, 10)+" -f") {
		t.Errorf("ssh to a running job: exit %d, %q", r.code, r.stderr)
	}
	e.must("jobs", "cancel", strconv.FormatInt(run, 10))
	// A job that succeeded keeps nothing.
	ok := e.launch(e.write("ok.yaml", "name: fine\nresources: {job_recovery: {keep_on_failure: 10m}}\nrun: 'true'\n"))
	e.waitStatus(ok, "SUCCEEDED")
	if r := e.run("jobs", "ssh", strconv.FormatInt(ok, 10)); r.code != 1 || !strings.Contains(r.stderr, "its cluster was not kept") {
		t.Errorf("ssh to a succeeded job: exit %d, %q", r.code, r.stderr)
	}
	waitClusterGone(t, clusterDir(e, ok), 10*time.Second)

	r = e.must("jobs", "release", sid)
	if !strings.Contains(r.stdout, "Releasing cluster sortie-"+sid+"-0-1") {
		t.Errorf("release printed %q", r.stdout)
	}
	waitClusterGone(t, clusterDir(e, id), 10*time.Second)
	d = e.waitFor(id, 10*time.Second, "released", func(d contract.JobDetail) bool { return d.Attempts[0].ReleasedAt != nil })
	if got := deref(d.Attempts[0].ReleasedReason); got != "released by user (jobs release)" || d.Status != "FAILED" {
		t.Errorf("released for %q, job %s", got, d.Status)
	}
	if r := e.run("jobs", "ssh", sid, "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "already released") {
		t.Errorf("ssh after the release: exit %d, %q", r.code, r.stderr)
	}
	if r := e.run("jobs", "release", sid); r.code != 1 || !strings.Contains(r.stderr, "already released") {
		t.Errorf("second release: exit %d, %q", r.code, r.stderr)
	}
	if out := e.must("jobs", "show", sid).stdout; !strings.Contains(out, "released") {
		t.Errorf("show after the release:\n%s", out)
	}
	e.waitNoClusters("after the release")
}

// A kept cluster goes by itself when keep_on_failure runs out, and a
// cancel of the job releases it at once.
func TestKeptClusterRunsOutOrIsCancelled(t *testing.T) {
	e := newEnv(t)
	short := e.launch(e.write("short.yaml", "name: short\nresources: {job_recovery: {keep_on_failure: 2s}}\nrun: exit 1\n"))
	long := e.launch(e.write("long.yaml", "name: long\nresources: {job_recovery: {keep_on_failure: 1h}}\nrun: exit 2\n"))
	e.waitStatus(short, "FAILED")
	e.waitStatus(long, "FAILED")
	d := e.waitFor(short, 15*time.Second, "released", func(d contract.JobDetail) bool { return d.Attempts[0].ReleasedAt != nil })
	if got := deref(d.Attempts[0].ReleasedReason); got != "keep_on_failure ran out" {
		t.Errorf("released for %q", got)
	}
	if d.Attempts[0].ReleasedAt.Before(*d.Attempts[0].KeptUntil) {
		t.Errorf("released at %v, before its time %v", d.Attempts[0].ReleasedAt, d.Attempts[0].KeptUntil)
	}
	waitClusterGone(t, clusterDir(e, short), 10*time.Second)
	if _, err := os.Stat(clusterDir(e, long)); err != nil {
		t.Fatalf("the cluster kept for an hour is gone: %v", err)
	}
	r := e.must("jobs", "cancel", strconv.FormatInt(long, 10))
	if !strings.Contains(r.stdout, "job "+strconv.FormatInt(long, 10)) {
		t.Errorf("cancel printed %q", r.stdout)
	}
	waitClusterGone(t, clusterDir(e, long), 10*time.Second)
	d = e.waitFor(long, 10*time.Second, "released", func(d contract.JobDetail) bool { return d.Attempts[0].ReleasedAt != nil })
	if got := deref(d.Attempts[0].ReleasedReason); got != "released by jobs cancel" || d.Status != "FAILED" {
		t.Errorf("after the cancel: released for %q, job %s", got, d.Status)
	}
}

// A controller killed with kill -9 while a cluster is kept: the next one
// leaves it until its time (its orphan sweep runs at start), then tears it
// down.
func TestKeptClusterSurvivesAControllerKill(t *testing.T) {
	e := newEnv(t)
	id := e.launch(e.write("fail.yaml", "name: kept\nresources: {job_recovery: {keep_on_failure: 6s}}\nrun: exit 4\n"))
	d := e.waitStatus(id, "FAILED")
	b, err := os.ReadFile(filepath.Join(e.home, "controller.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	startController(t, e)
	if time.Now().Before(*d.Attempts[0].KeptUntil) {
		if _, err := os.Stat(clusterDir(e, id)); err != nil {
			t.Fatalf("the restarted controller tore the kept cluster down before its time: %v", err)
		}
	} else {
		t.Log("the restart took longer than the keep; only the teardown after it is checked")
	}
	waitClusterGone(t, clusterDir(e, id), 20*time.Second)
	d = e.waitFor(id, 10*time.Second, "released", func(d contract.JobDetail) bool { return d.Attempts[0].ReleasedAt != nil })
	if got := deref(d.Attempts[0].ReleasedReason); got != "keep_on_failure ran out" {
		t.Errorf("released for %q", got)
	}
}

func TestKeepOnFailureLimitsAreRefused(t *testing.T) {
	e := newEnv(t, "SORTIE_MAX_KEEP_ON_FAILURE=2h")
	for _, tc := range []struct{ keep, want string }{
		{"3h", `resources.job_recovery.keep_on_failure: "3h" is above controller.max_keep_on_failure (2h)`},
		{"-1m", `resources.job_recovery.keep_on_failure: "-1m" is not positive`},
	} {
		f := e.write("k.yaml", "resources: {job_recovery: {keep_on_failure: "+tc.keep+"}}\nrun: 'true'\n")
		if r := e.run("jobs", "launch", "-d", f); r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("keep_on_failure %s: exit %d, %q; want 2 and %q", tc.keep, r.code, r.stderr, tc.want)
		}
	}
	if jobs := e.queue("-a"); len(jobs) != 0 {
		t.Errorf("%d jobs stored", len(jobs))
	}
}

// On AWS (moto, with the test sshd playing the instance) a failed job's
// instance is kept; jobs ssh reaches it over SSH through the controller
// program, in the failed attempt's directory with its environment, and
// jobs release terminates it.
func TestKeepOnFailureAWS(t *testing.T) {
	e := newAWSEnv(t)
	f := e.write("fail.yaml", `
name: broken
resources:
  cloud: aws
  region: us-east-1
  instance_type: t3.micro
  job_recovery: {keep_on_failure: 10m}
envs: {MSG: over ssh}
run: |
  echo "$MSG" >marker
  exit 3
`)
	id := e.launch(f)
	sid := strconv.FormatInt(id, 10)
	d := e.waitStatus(id, "FAILED")
	if d.Attempts[0].KeptUntil == nil || len(d.Attempts[0].InstanceIDs) != 1 {
		t.Fatalf("attempt %+v, want one instance kept", d.Attempts[0])
	}
	inst := d.Attempts[0].InstanceIDs[0]
	live := func() []string { return cloudtest.LiveInstances(t, e.moto.URL, "us-east-1") }
	if got := live(); len(got) != 1 || got[0] != inst {
		t.Fatalf("instances running %v, want the kept %s", got, inst)
	}
	r := e.run("jobs", "ssh", sid, "--", "sh", "-c", `cat marker; echo "$SORTIE_JOB_ID"; exit 7`)
	if want := "over ssh\n" + sid + "\n"; r.code != 7 || r.stdout != want {
		t.Errorf("jobs ssh over SSH: exit %d, out %q, err %q; want 7, %q", r.code, r.stdout, r.stderr, want)
	}
	e.must("jobs", "release", sid)
	e.waitFor(id, 30*time.Second, "released", func(d contract.JobDetail) bool { return d.Attempts[0].ReleasedAt != nil })
	deadline := time.Now().Add(30 * time.Second)
	for len(live()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("instances still running 30s after the release: %v", live())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := e.run("jobs", "ssh", sid, "--", "true"); r.code != 1 || !strings.Contains(r.stderr, "already released") {
		t.Errorf("ssh after the release: exit %d, %q", r.code, r.stderr)
	}
}
