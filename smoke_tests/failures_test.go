package smoke_tests

import (
	"encoding/json"
	"os"
	"sortie/controller/contract"
	"strconv"
	"strings"
	"testing"
)

func failures(e *env) []contract.FailureView {
	e.t.Helper()
	r := e.must("jobs", "failures", "-o", "json")
	var fs []contract.FailureView
	if err := json.Unmarshal([]byte(r.stdout), &fs); err != nil {
		e.t.Fatalf("failures -o json: %v\n%s", err, r.stdout)
	}
	return fs
}

func TestKnownFailureRefusedUntilInputsChange(t *testing.T) {
	e := newEnv(t)
	e.write("src/data.txt", "v1\n")
	e.write("src/.gitignore", "*.tmp\n")
	f := e.write("task.yaml", `# train the model
name: train
workdir: src
resources:
  cpus: 1
envs:
  A: "1"
  B: "2"
run: |
  echo "reading $(cat data.txt)"
  grep -q v2 data.txt || exit 1
`)
	id := e.launch(f)
	d := e.waitStatus(id, "FAILED")
	if d.InputKey == nil {
		t.Fatal("no input key")
	}
	fs := failures(e)
	if len(fs) != 1 || fs[0].JobID != id || fs[0].InputKey != *d.InputKey {
		t.Fatalf("known failures: %+v", fs)
	}

	r := e.run("jobs", "launch", "-d", f)
	if r.code != 3 {
		t.Fatalf("relaunch: exit %d, want 3; %s", r.code, r.stderr)
	}
	for _, want := range []string{"job " + strconv.FormatInt(id, 10), "exit code 1", "sortie jobs logs " + strconv.FormatInt(id, 10), "--retry-failed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("refusal lacks %q: %s", want, r.stderr)
		}
	}
	// Reformatted YAML (keys reordered, comments, flow style) is the same input.
	g := e.write("task2.yaml", `run: |
  echo "reading $(cat data.txt)"
  grep -q v2 data.txt || exit 1
envs: {B: "2", A: "1"}   # same envs
resources: {cpus: 1}
workdir: src
name: train
`)
	if r := e.run("jobs", "launch", "-d", g); r.code != 3 {
		t.Errorf("reformatted task: exit %d, want 3", r.code)
	}
	// An ignored file does not count.
	e.write("src/scratch.tmp", "noise")
	if r := e.run("jobs", "launch", "-d", f); r.code != 3 {
		t.Errorf("after an ignored file changed: exit %d, want 3", r.code)
	}
	if n := len(e.queue("-a")); n != 1 {
		t.Fatalf("refused launches created jobs: %d", n)
	}
	// One byte changed in the workdir: new inputs, runs (and now succeeds).
	e.write("src/data.txt", "v2\n")
	id2 := e.launch(f)
	e.waitStatus(id2, "SUCCEEDED")
}

func TestRetryFailedClearsRecord(t *testing.T) {
	e := newEnv(t)
	flag := e.dir + "/fixed"
	f := e.write("task.yaml", "run: '[ -f "+flag+" ]'\n")
	id := e.launch(f)
	e.waitStatus(id, "FAILED")
	if len(failures(e)) != 1 {
		t.Fatal("no known failure recorded")
	}
	// The environment is fixed outside the inputs; the user forces a run.
	e.write("fixed", "")
	id2 := e.launch(f, "--retry-failed")
	e.waitStatus(id2, "SUCCEEDED")
	if fs := failures(e); len(fs) != 0 {
		t.Errorf("record not cleared after success: %+v", fs)
	}
	if r := e.run("jobs", "launch", "-d", f); r.code != 0 {
		t.Errorf("launch after the record cleared: exit %d %s", r.code, r.stderr)
	}
}

func TestInfrastructureEndingsNotRecorded(t *testing.T) {
	e := newEnv(t, "SORTIE_LAUNCH_ROUNDS=1")
	// No capacity anywhere: FAILED_NO_RESOURCE.
	e.must("local", "capacity", "local", "off")
	f := e.write("task.yaml", "run: exit 1\n")
	id := e.launch(f)
	e.waitStatus(id, "FAILED_NO_RESOURCE")
	e.must("local", "capacity", "local", "on")
	// Preempted, then cancelled.
	marker := e.dir + "/started"
	g := e.write("long.yaml", "run: |\n  touch "+marker+"\n  sleep 300\n")
	id2 := e.launch(g)
	waitFile(t, marker)
	e.waitStatus(id2, "RUNNING")
	os.Remove(marker)
	e.must("local", "preempt", strconv.FormatInt(id2, 10))
	waitFile(t, marker)
	e.must("jobs", "cancel", strconv.FormatInt(id2, 10))
	d := e.waitStatus(id2, "CANCELLED")
	if d.RecoveryCount != 1 {
		t.Errorf("recovery_count %d, want 1", d.RecoveryCount)
	}
	if fs := failures(e); len(fs) != 0 {
		t.Errorf("recorded: %+v", fs)
	}
	// Forget works by prefix and --all.
	h := e.write("fail.yaml", "run: exit 7\n")
	id3 := e.launch(h)
	e.waitStatus(id3, "FAILED")
	fs := failures(e)
	if len(fs) != 1 {
		t.Fatalf("failures: %+v", fs)
	}
	e.must("jobs", "failures", "forget", fs[0].InputKey[:10])
	if len(failures(e)) != 0 {
		t.Error("forget did not forget")
	}
}

func TestLogsOfFailedAttemptAfterTeardown(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", `
resources:
  job_recovery: {max_restarts_on_errors: 1}
run: |
  echo "output of attempt $SORTIE_ATTEMPT"
  exit 1
`)
	id := e.launch(f)
	d := e.waitStatus(id, "FAILED")
	if len(d.Attempts) != 2 {
		t.Fatalf("attempts: %d", len(d.Attempts))
	}
	if _, err := os.Stat(e.home + "/local"); err != nil {
		t.Fatalf("the local provider's state is not where this test looks: %v", err)
	}
	e.waitNoClusters("after the job ended")
	for n := 1; n <= 2; n++ {
		out := e.must("jobs", "logs", strconv.FormatInt(id, 10), "--attempt", strconv.Itoa(n)).stdout
		if !strings.Contains(out, "output of attempt "+strconv.Itoa(n)) {
			t.Errorf("logs of attempt %d: %q", n, out)
		}
	}
}
