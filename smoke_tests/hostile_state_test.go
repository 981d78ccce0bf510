package smoke_tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// TestATaskCannotForgeItsResult: a task that wrote "run 99999999999" into
// its exit_code file ended its job FAILED 99999999999, and a 70 KB phase
// file made every poll fail into node_lost recoveries. What a task writes
// where the agent records the exit code is not the agent's record (its tag
// does not verify, and the agent writes its own over it): the job ends
// with the code the task exited with; the long file changes nothing.
func TestATaskCannotForgeItsResult(t *testing.T) {
	e := newEnv(t)
	forged := e.launch(e.write("forge.yaml", `
resources: {job_recovery: {max_restarts_on_errors: 0}}
run: |
  mkdir -p "$SORTIE_NODE_DIR/record"
  for f in "$SORTIE_NODE_DIR/exit_code" "$SORTIE_NODE_DIR/record/exit_code"; do
    printf 'run 99999999999' >"$f.x" && mv "$f.x" "$f"
  done
  exit 5
`))
	long := e.launch(e.write("long.yaml", `
resources: {job_recovery: {max_restarts_on_errors: 0}}
run: |
  head -c 70000 /dev/zero | tr '\0' x >"$SORTIE_NODE_DIR/phase"
  sleep 1
  exit 3
`))
	d := e.waitStatus(forged, lifecycle.Failed)
	if got := codes(d); len(got) != 1 || len(got[0]) != 1 || got[0][0] != 5 || d.RecoveryCount != 0 {
		t.Errorf("forged: exit codes %v, %d recoveries; want one attempt that exited 5", got, d.RecoveryCount)
	}
	d = e.waitStatus(long, lifecycle.Failed)
	if got := codes(d); len(got) != 1 || len(got[0]) != 1 || got[0][0] != 3 || d.RecoveryCount != 0 {
		t.Errorf("long phase file: exit codes %v, %d recoveries; want one attempt that exited 3", got, d.RecoveryCount)
	}
}

// TestACorruptSimStateEndsOnlyItsJob: {"clusters":{"c":null}} in the sim's
// state file panicked the daemon. Now the job whose cluster cannot be read
// back ends FAILED_CONTROLLER naming the file, and the other job, the
// daemon and the commands go on.
func TestACorruptSimStateEndsOnlyItsJob(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("sim:\n  run_time: 1h\n  save_every: 1ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	task := e.write("sim.yaml", "resources: {cloud: sim}\nrun: train\n")
	bad, good := e.launch(task), e.launch(task)
	e.waitStatus(bad, lifecycle.Running)
	e.waitStatus(good, lifecycle.Running)
	cluster := e.show(bad).Attempts[0].Cluster
	e.must("controller", "stop")

	path := filepath.Join(e.home, "sim", "state.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(b, &state); err != nil {
		t.Fatal(err)
	}
	clusters, _ := state["clusters"].(map[string]any)
	if clusters[cluster] == nil {
		t.Fatalf("the sim's state holds no cluster %s: %s", cluster, b)
	}
	clusters[cluster] = nil
	if b, err = json.Marshal(state); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	// A launch starts the controller again; the new job goes on too.
	local := e.launch(e.write("local.yaml", "run: echo fine\n"))
	d := e.waitStatus(bad, lifecycle.FailedController)
	if r := deref(d.FailureReason) + deref(d.StatusReason); !strings.Contains(r, path) || !strings.Contains(r, "is null") {
		t.Errorf("the job on the corrupt cluster ended with %q; want the file and the reason", r)
	}
	time.Sleep(time.Second) // a few ticks of the restarted controller
	if d := e.show(good); d.Status != lifecycle.Running {
		t.Errorf("the other job is %s, want RUNNING", d.Status)
	}
	if r := e.must("controller", "status"); !strings.Contains(r.stdout, "running") {
		t.Errorf("controller status: %s", r.stdout)
	}
	e.waitStatus(local, lifecycle.Succeeded)
	e.must("jobs", "cancel", strconv.FormatInt(good, 10))
	e.waitStatus(good, lifecycle.Cancelled)
}

// TestTheHomeIsPrivate: SORTIE_HOME was 0755, and the store (specs, env
// values, commands), its WAL, controller.log and kept logs 0644. Now the
// home and what sortie writes there are its owner's only, and sortie check
// warns about a home that is not, with the chmod that fixes it.
func TestTheHomeIsPrivate(t *testing.T) {
	e := newEnv(t)
	id := e.launch(e.write("t.yaml", "envs: {TOKEN_LIKE: abc}\nrun: echo private\n"))
	e.waitStatus(id, lifecycle.Succeeded)
	var checked int
	err := filepath.WalkDir(e.home, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.home, p)
		if d.IsDir() && (rel == "local" || rel == "sim") {
			return filepath.SkipDir // the nodes' own trees, where tasks write with their umask
		}
		fi, err := d.Info()
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		checked++
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v; want it private to its owner", p, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"state.db", "state.db-wal", "controller.log", "logs/" + strconv.FormatInt(id, 10) + "/task-0.attempt-1.node-0.log"} {
		if _, err := os.Stat(filepath.Join(e.home, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"local", filepath.Join("local", "clusters")} {
		if fi, err := os.Stat(filepath.Join(e.home, p)); err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v", p, fi.Mode().Perm())
		}
	}
	if r := e.must("check"); strings.Contains(r.stderr, "warning") {
		t.Errorf("check warned about a private home: %s", r.stderr)
	}
	if err := os.Chmod(e.home, 0o755); err != nil {
		t.Fatal(err)
	}
	r := e.must("check")
	if !strings.Contains(r.stderr, "warning: SORTIE_HOME is open to other users") || !strings.Contains(r.stderr, "chmod -R go-rwx "+e.home) {
		t.Errorf("check on a 0755 home: stderr %q; want a warning with the chmod to run", r.stderr)
	}
	var clouds []map[string]any
	if err := json.Unmarshal([]byte(e.must("check", "-o", "json").stdout), &clouds); err != nil {
		t.Errorf("check -o json is no longer the list of clouds: %v", err)
	}
}

// TestConfigErrorsNameTheKeyAndLine: config errors read like internals
// ("error unmarshaling JSON: while decoding JSON: ...", exit 1), and
// poll_interval: 1ns was accepted. Each names the file, line and key, and
// exits 2.
func TestConfigErrorsNameTheKeyAndLine(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{"controller:\n  sweep_interval: 1ns\n", "config.yaml line 2: controller.sweep_interval: 1ns is out of range; give a duration from 1s to 24h"},
		{"controller:\n  max_parallel_lanches: 4\n", `config.yaml line 2: controller.max_parallel_lanches: unknown field; did you mean "max_parallel_launches"?`},
		{"local:\n  regions: local\n", `config.yaml line 2: local.regions: "local" is not a list`},
	} {
		e := newEnv(t)
		if err := os.MkdirAll(e.home, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(tc.config), 0o600); err != nil {
			t.Fatal(err)
		}
		r := e.run("jobs", "queue")
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "JSON") {
			t.Errorf("config %q: exit %d, stderr %q; want exit 2 and %q", tc.config, r.code, r.stderr, tc.want)
		}
	}
	e := newEnv(t, "SORTIE_POLL_INTERVAL=1ns")
	if r := e.run("jobs", "queue"); r.code != 2 || !strings.Contains(r.stderr, "environment variable SORTIE_POLL_INTERVAL: 1ns is out of range") {
		t.Errorf("SORTIE_POLL_INTERVAL=1ns: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestWhatNoNodeCanStartIsRefusedAtLaunch: a file_mounts destination with
// "..", an env value with a NUL byte and a mount from /dev/null failed
// every start and looped as node_lost recoveries. They are refused at
// launch, exit 2, naming the field; nothing is stored.
func TestWhatNoNodeCanStartIsRefusedAtLaunch(t *testing.T) {
	e := newEnv(t)
	e.write("data.txt", "x\n")
	for _, tc := range []struct{ task, want string }{
		{"run: x\nfile_mounts:\n  ../../etc/x: ./data.txt\n", `file_mounts.../../etc/x: "../../etc/x" holds ".."`},
		{"run: x\nenvs:\n  A: \"x\\0y\"\n", "envs.A: holds a NUL byte"},
		{"run: x\nfile_mounts:\n  /tmp/x: /dev/null\n", "source /dev/null is a character device; sortie copies regular files and directories only"},
	} {
		r := e.run("jobs", "launch", "-d", e.write("t.yaml", tc.task))
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.task, r.code, r.stderr, tc.want)
		}
	}
	var jobs []contract.JobView
	if err := json.Unmarshal([]byte(e.must("jobs", "queue", "-a", "-o", "json").stdout), &jobs); err != nil || len(jobs) != 0 {
		t.Errorf("jobs stored: %v %v", jobs, err)
	}
}
