package smoke_tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestWorkdirAndFileMountsReachTheTask(t *testing.T) {
	e := newEnv(t)
	e.write("proj/train.sh", "echo training with $(cat config.txt)\n")
	e.write("proj/config.txt", "lr=0.1\n")
	e.write("data/shard.csv", "a,b\n1,2\n")
	f := e.write("task.yaml", `
workdir: proj
file_mounts:
  inputs/shard.csv: data/shard.csv
run: |
  bash train.sh
  wc -l < inputs/shard.csv
`)
	id := e.launch(f)
	e.waitStatus(id, "SUCCEEDED")
	out := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(out, "training with lr=0.1") || !strings.Contains(out, "2") {
		t.Errorf("logs: %q", out)
	}
}

func TestSecretsNeverStored(t *testing.T) {
	e := newEnv(t, "API_TOKEN=s3cr3t-value")
	out := filepath.Join(e.dir, "seen")
	f := e.write("task.yaml", "secrets: {API_TOKEN: null}\nrun: echo \"$API_TOKEN\" > "+out+"\n")
	id := e.launch(f)
	e.waitStatus(id, "SUCCEEDED")
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != "s3cr3t-value" {
		t.Fatalf("the task saw %q", b)
	}
	show := e.must("jobs", "show", strconv.FormatInt(id, 10), "-o", "json").stdout
	if strings.Contains(show, "s3cr3t") {
		t.Errorf("show prints the secret")
	}
	e.must("controller", "stop")
	filepath.Walk(e.home, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "s3cr3t") {
			t.Errorf("%s holds the secret after the job ended", p)
		}
		return nil
	})
	// A task that did not ask for the secret does not get it, though it is
	// in the environment of whoever started the controller.
	other := filepath.Join(e.dir, "other")
	g0 := e.write("nosecretasked.yaml", "run: echo \"${API_TOKEN:-unset}\" > "+other+"\n")
	id2 := e.launch(g0)
	e.waitStatus(id2, "SUCCEEDED")
	if b, _ := os.ReadFile(other); strings.TrimSpace(string(b)) != "unset" {
		t.Errorf("a task that declared no secret saw API_TOKEN=%q", b)
	}
	// A secret without a value is a usage error.
	g := e.write("nosecret.yaml", "secrets: {MISSING_TOKEN: null}\nrun: 'true'\n")
	if r := e.run("jobs", "launch", "-d", g); r.code != 2 || !strings.Contains(r.stderr, "MISSING_TOKEN") {
		t.Errorf("missing secret: exit %d %s", r.code, r.stderr)
	}
}

func TestLaunchOverridesAreValidated(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", "run: 'true'\n")
	for _, args := range [][]string{
		{"--cloud", "nosuch"},
		{"--env", "BAD-KEY=1"},
	} {
		r := e.run(append([]string{"jobs", "launch", "-d", f}, args...)...)
		if r.code != 2 {
			t.Errorf("launch %v: exit %d, want 2; %s", args, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, strings.TrimPrefix(args[0], "--")[:3]) {
			t.Errorf("launch %v: message does not name the field: %s", args, r.stderr)
		}
	}
	if n := len(e.queue("-a")); n != 0 {
		t.Errorf("%d jobs stored", n)
	}
	id := e.launch(f, "--env", "GOOD=1", "--zone", "local-b")
	d := e.waitStatus(id, "SUCCEEDED")
	if deref(d.Attempts[0].Zone) != "local-b" {
		t.Errorf("--zone local-b ran in %s", deref(d.Attempts[0].Zone))
	}
}

func TestInputsGoneBeforeStartFailPrechecks(t *testing.T) {
	e := newEnv(t, "SORTIE_LAUNCH_BACKOFF_INITIAL=1s", "SORTIE_LAUNCH_BACKOFF_MAX=1s")
	e.write("proj/main.sh", "echo hi\n")
	// No capacity at first, so the job waits; meanwhile its workdir goes.
	e.must("local", "capacity", "local", "off")
	f := e.write("task.yaml", "workdir: proj\nrun: bash main.sh\n")
	id := e.launch(f)
	e.waitStatus(id, "PENDING")
	if err := os.RemoveAll(filepath.Join(e.dir, "proj")); err != nil {
		t.Fatal(err)
	}
	e.must("local", "capacity", "local", "on")
	d := e.waitStatus(id, "FAILED_PRECHECKS")
	if !strings.Contains(deref(d.FailureReason), "workdir") {
		t.Errorf("failure_reason %q", deref(d.FailureReason))
	}
	e.waitNoClusters("after the prechecks failed")
}
