package smoke_tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/contract"
	"sortie/smoke_tests/chaos/storm"
)

func TestRecoverOnListedExitCode(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", `
name: flaky
resources:
  job_recovery:
    max_restarts_on_errors: 0
    recover_on_exit_codes: [29]
run: |
  echo "attempt $SORTIE_ATTEMPT"
  if [ "$SORTIE_ATTEMPT" -lt 3 ]; then exit 29; fi
`)
	id := e.launch(f)
	d := e.waitStatus(id, "SUCCEEDED")
	if d.RecoveryCount != 2 || d.RestartsOnErrors != 0 {
		t.Errorf("recovery_count %d restarts_on_errors %d, want 2 and 0", d.RecoveryCount, d.RestartsOnErrors)
	}
	if diff := cmp.Diff([][]int{{29}, {29}, {0}}, codes(d)); diff != "" {
		t.Errorf("attempts' exit codes (-want +got):\n%s", diff)
	}
	if !strings.Contains(deref(d.Attempts[0].Decision), "recover_on_exit_codes") {
		t.Errorf("first decision %q does not say why", deref(d.Attempts[0].Decision))
	}
	logs := e.must("jobs", "logs", strconv.FormatInt(id, 10), "--attempt", "2").stdout
	if !strings.Contains(logs, "attempt 2") {
		t.Errorf("logs of attempt 2: %q", logs)
	}
	q := e.queue("-a")
	if len(q) != 1 || q[0].ID != id || q[0].RecoveryCount != 2 || q[0].ExitCodes == nil || *q[0].ExitCodes[0] != 0 {
		t.Errorf("queue: %+v", q)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestRestartBudget(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", `
resources:
  job_recovery:
    max_restarts_on_errors: 2
run: exit 1
`)
	id := e.launch(f)
	d := e.waitStatus(id, "FAILED")
	if diff := cmp.Diff([][]int{{1}, {1}, {1}}, codes(d)); diff != "" {
		t.Errorf("attempts' exit codes (-want +got):\n%s", diff)
	}
	if d.FailureReason == nil || !strings.Contains(*d.FailureReason, "max_restarts_on_errors") {
		t.Errorf("failure_reason %v", d.FailureReason)
	}
}

func TestSetupFailure(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", "setup: exit 5\nrun: echo never\n")
	id := e.launch(f)
	d := e.waitStatus(id, "FAILED_SETUP")
	if diff := cmp.Diff([][]int{{5}}, codes(d)); diff != "" {
		t.Errorf("exit codes (-want +got):\n%s", diff)
	}
	if logs := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout; strings.Contains(logs, "never") {
		t.Errorf("run ran after a failed setup: %q", logs)
	}
}

func TestPreemptionRecovers(t *testing.T) {
	e := newEnv(t)
	marker := e.write("go", "")
	os.Remove(marker)
	f := e.write("task.yaml", `
run: |
  echo "attempt $SORTIE_ATTEMPT"
  if [ "$SORTIE_ATTEMPT" = 1 ]; then touch `+marker+`; sleep 300; fi
`)
	id := e.launch(f)
	waitFile(t, marker)
	e.waitStatus(id, "RUNNING")
	e.must("local", "preempt", strconv.FormatInt(id, 10))
	e.waitFor(id, 30*time.Second, "RECOVERING or a second attempt", func(d contract.JobDetail) bool {
		return d.Status == "RECOVERING" || len(d.Attempts) > 1
	})
	d := e.waitStatus(id, "SUCCEEDED")
	if d.RestartsOnErrors != 0 || d.RecoveryCount != 1 {
		t.Errorf("restarts_on_errors %d recovery_count %d, want 0 and 1", d.RestartsOnErrors, d.RecoveryCount)
	}
	if len(d.Attempts) != 2 || deref(d.Attempts[0].Outcome) != "preempted" {
		t.Fatalf("attempts: %+v", d.Attempts)
	}
	if d.Attempts[0].Cluster == d.Attempts[1].Cluster {
		t.Errorf("recovery reused cluster %s; want a new one", d.Attempts[0].Cluster)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

func TestTwoNodesAnyListedCodeRestarts(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", `
num_nodes: 2
resources:
  job_recovery:
    recover_on_exit_codes: 29
run: |
  echo "rank $SORTIE_NODE_RANK of $SORTIE_NUM_NODES"
  if [ "$SORTIE_ATTEMPT" = 1 ] && [ "$SORTIE_NODE_RANK" = 1 ]; then exit 29; fi
  exit 0
`)
	id := e.launch(f)
	d := e.waitStatus(id, "SUCCEEDED")
	got := codes(d)
	// Both nodes end at once: the attempt ends at the first failed node
	// seen, and node 0 is stopped then unless it had already exited, so
	// its first code is 0 or unknown (-1), as the controller saw it.
	if len(got) == 2 && len(got[0]) == 2 && got[0][0] == -1 {
		got[0][0] = 0
	}
	if diff := cmp.Diff([][]int{{0, 29}, {0, 0}}, got); diff != "" {
		t.Errorf("exit codes (-want +got, node 0's first code 0 or unknown):\n%s", diff)
	}
	if d.RecoveryCount != 1 || d.RestartsOnErrors != 0 {
		t.Errorf("recovery_count %d restarts_on_errors %d", d.RecoveryCount, d.RestartsOnErrors)
	}
	logs := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(logs, "(node 1) rank 1 of 2") {
		t.Errorf("logs lack node 1's line: %q", logs)
	}
}

func TestCancelRunningJob(t *testing.T) {
	e := newEnv(t)
	marker := e.dir + "/started"
	f := e.write("task.yaml", "run: |\n  touch "+marker+"\n  sleep 300\n")
	id := e.launch(f)
	waitFile(t, marker)
	e.must("jobs", "cancel", strconv.FormatInt(id, 10))
	d := e.waitStatus(id, "CANCELLED")
	if len(d.Attempts) != 1 || deref(d.Attempts[0].Outcome) != "cancelled" {
		t.Errorf("attempts: %+v", d.Attempts)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := taskProcesses(e.home)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still running after cancel: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A terminal status never changes.
	if r := e.run("jobs", "cancel", strconv.FormatInt(id, 10)); r.code != 1 {
		t.Errorf("second cancel exit %d", r.code)
	}
}

// taskProcesses lists processes under home other than the controller.
func taskProcesses(home string) []int {
	daemon := 0
	if b, err := os.ReadFile(home + "/controller.pid"); err == nil {
		daemon, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	var out []int
	for _, pid := range storm.ProcessesUnder(home) {
		if pid != daemon {
			out = append(out, pid)
		}
	}
	return out
}

func TestControllerKilledMidRun(t *testing.T) {
	e := newEnv(t)
	gate := e.dir + "/gate"
	started := e.dir + "/started"
	f := e.write("task.yaml", "run: |\n  touch "+started+"\n  while [ ! -f "+gate+" ]; do sleep 0.05; done\n  echo done\n  exit 3\n")
	id := e.launch(f, "--env", "X=1")
	waitFile(t, started)
	e.waitStatus(id, "RUNNING")
	b, err := os.ReadFile(e.home + "/controller.pid")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	// The task keeps running without its controller and ends meanwhile.
	e.write("gate", "")
	time.Sleep(300 * time.Millisecond)
	// Any CLI call that needs the controller starts it again; a queue
	// that finds the job unfinished and no controller too, and says so.
	if r := e.run("controller", "status"); r.code != 1 {
		t.Errorf("controller status after kill -9: exit %d, %s", r.code, r.stdout)
	}
	r := e.run("jobs", "queue", "-o", "json")
	if r.code != 0 {
		t.Fatalf("queue: %+v", r)
	}
	if !strings.HasPrefix(r.stderr, "sortie: the controller was not running; started it (pid ") ||
		!strings.HasSuffix(r.stderr, ") to go on with 1 unfinished job\n") {
		t.Errorf("queue after kill -9 said %q, want that it started the controller", r.stderr)
	}
	if !json.Valid([]byte(r.stdout)) {
		t.Errorf("queue -o json printed more than JSON: %q", r.stdout)
	}
	if r := e.run("controller", "status"); r.code != 0 {
		t.Errorf("controller status after jobs queue: exit %d, %s", r.code, r.stdout)
	}
	startController(t, e)
	d := e.waitStatus(id, "FAILED")
	if diff := cmp.Diff([][]int{{3}}, codes(d)); diff != "" {
		t.Errorf("exactly one attempt with its exit code (-want +got):\n%s", diff)
	}
	if left := taskProcesses(e.home); len(left) != 0 {
		t.Errorf("stray processes: %v", left)
	}
	if logs := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout; !strings.Contains(logs, "done") {
		t.Errorf("logs: %q", logs)
	}
}

// A kill -9 of a node's agent mid-run loses the task's exit code: the
// attempt ends as a failure naming the lost agent (never a code the task
// did not exit with), spends the restart budget, and the next attempt
// finishes the job; nothing of the first attempt is left running.
func TestAgentKilledMidRun(t *testing.T) {
	e := newEnv(t)
	started := e.dir + "/started"
	f := e.write("task.yaml", `resources:
  job_recovery:
    max_restarts_on_errors: 1
run: |
  if [ -f `+started+` ]; then echo second; exit 0; fi
  touch `+started+`
  sleep 300
`)
	id := e.launch(f)
	waitFile(t, started)
	e.waitStatus(id, "RUNNING")
	agents := 0
	for _, pid := range taskProcesses(e.home) {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && filepath.Base(args[0]) == "sortie-agent" && args[1] == "run" {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			agents++
		}
	}
	if agents != 1 {
		t.Fatalf("killed %d agents, want the one node's", agents)
	}
	d := e.waitStatus(id, "SUCCEEDED")
	if diff := cmp.Diff([][]int{{-1}, {0}}, codes(d)); diff != "" {
		t.Errorf("two attempts, the first without a code (-want +got):\n%s", diff)
	}
	if len(d.Attempts) != 2 || !strings.Contains(deref(d.Attempts[0].Reason), "node agent on node 0 died without an exit code (killed") {
		t.Errorf("first attempt: %+v, want it to name the lost agent", d.Attempts)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(taskProcesses(e.home)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stray processes: %v", taskProcesses(e.home))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func startController(t *testing.T, e *env) {
	t.Helper()
	// Launching a job, or cancelling one that has not ended, starts the
	// controller; a no-op launch does it without touching the job under test.
	f := e.write("noop.yaml", "name: noop\nrun: 'true'\n")
	id := e.launch(f, "--env", "N="+strconv.FormatInt(time.Now().UnixNano(), 10))
	e.waitStatus(id, "SUCCEEDED")
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still alive", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestInvalidTaskStoresNothing(t *testing.T) {
	e := newEnv(t)
	f := e.write("bad.yaml", `
resources:
  job_recovery:
    recover_on_exit_codes: [29, 300]
    max_restarts_on_errors: -1
  job_recvery: {}
run: echo hi
`)
	r := e.run("jobs", "launch", "-d", f)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", r.code, r.stderr)
	}
	for _, want := range []string{"recover_on_exit_codes[1]", "300", "max_restarts_on_errors", "job_recovery"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("message lacks %q:\n%s", want, r.stderr)
		}
	}
	if q := e.queue("-a"); len(q) != 0 {
		t.Errorf("jobs stored: %+v", q)
	}
}

// alive says whether pid runs; a zombie no one has reaped yet does not.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
