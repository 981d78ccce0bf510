// Package smoke_tests builds the real sortie binary and drives it as a user
// would, each test with its own SORTIE_HOME, asserting on -o json.
package smoke_tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/smoke_tests/chaos/storm"
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// TestMain removes the programs binary built, once every test is done.
func TestMain(m *testing.M) {
	code := m.Run()
	stopControlPlane()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds the sortie CLI and the controller program beside it once
// per test run, and returns the CLI's path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sortie-smoke-bin")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "sortie")
		out, err := exec.Command("go", "build", "-o", dir+"/", "sortie/cmd/sortie", "sortie/cmd/sortie-controller", "sortie/cmd/sortie-agent", "sortie/cmd/sortie-sync").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// env is one user's world: a SORTIE_HOME, a work directory and the binary.
type env struct {
	t     *testing.T
	bin   string
	home  string
	dir   string
	extra []string
	// serverURL is the address users reach the server last started on
	// this home at (its --url, else where it listens): what `server users
	// add` links them to.
	serverURL string
}

// newEnv gives the test its own home with fast timings, and stops its
// controller and every process it left when the test ends.
func newEnv(t *testing.T, extra ...string) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, bin: binary(t), home: filepath.Join(root, "home"), dir: filepath.Join(root, "work"), extra: extra}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.run("controller", "stop")
		if b, err := os.ReadFile(filepath.Join(e.home, "controller.log")); err == nil && t.Failed() {
			t.Logf("controller log:\n%s", tail(string(b), 6000))
		}
		killLeftovers(t, e.home)
	})
	return e
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (e *env) environ() []string {
	env := append(os.Environ(),
		"SORTIE_HOME="+e.home,
		"SORTIE_POLL_INTERVAL=100ms",
		"SORTIE_RESTART_BACKOFF_INITIAL=100ms",
		"SORTIE_RESTART_BACKOFF_MAX=500ms",
		"SORTIE_LAUNCH_BACKOFF_INITIAL=200ms",
		"SORTIE_LAUNCH_BACKOFF_MAX=1s",
		// Tasks of these tests leave their marks in the test's own
		// folders, which a sandboxed task cannot write; the sandbox's
		// tests ask for it (SORTIE_LOCAL_SANDBOX=on in extra).
		"SORTIE_LOCAL_SANDBOX=off",
	)
	return append(env, e.extra...)
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs the binary and returns what it printed and its exit status.
func (e *env) run(args ...string) result {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = e.dir
	cmd.Env = e.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		e.t.Fatalf("run sortie %v: %v", args, err)
	}
	return r
}

// must runs the binary and fails the test unless it exits 0.
func (e *env) must(args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != 0 {
		e.t.Fatalf("sortie %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// write puts a file in the work directory.
func (e *env) write(name, body string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// launch submits a task file detached and returns the job id.
func (e *env) launch(file string, args ...string) int64 {
	e.t.Helper()
	r := e.must(append([]string{"jobs", "launch", "-d", file}, args...)...)
	id, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
	if err != nil {
		e.t.Fatalf("launch printed %q, want a job id", r.stdout)
	}
	return id
}

func (e *env) show(id int64) contract.JobDetail {
	e.t.Helper()
	r := e.must("jobs", "show", strconv.FormatInt(id, 10), "-o", "json")
	var d contract.JobDetail
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		e.t.Fatalf("show -o json: %v\n%s", err, r.stdout)
	}
	return d
}

func (e *env) queue(args ...string) []contract.JobView {
	e.t.Helper()
	r := e.must(append([]string{"jobs", "queue", "-o", "json"}, args...)...)
	var jobs []contract.JobView
	if err := json.Unmarshal([]byte(r.stdout), &jobs); err != nil {
		e.t.Fatalf("queue -o json: %v\n%s", err, r.stdout)
	}
	return jobs
}

// waitFor polls the job until cond holds, for at most d.
func (e *env) waitFor(id int64, d time.Duration, what string, cond func(contract.JobDetail) bool) contract.JobDetail {
	e.t.Helper()
	deadline := time.Now().Add(d)
	var last contract.JobDetail
	for time.Now().Before(deadline) {
		last = e.show(id)
		if cond(last) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := json.MarshalIndent(last, "", "  ")
	e.t.Fatalf("job %d: waited %s for %s; last seen:\n%s", id, d, what, b)
	return last
}

func (e *env) waitStatus(id int64, status lifecycle.Status) contract.JobDetail {
	e.t.Helper()
	return e.waitFor(id, 60*time.Second, "status "+string(status), func(d contract.JobDetail) bool {
		if d.Status != status && isTerminal(d.Status) {
			b, _ := json.MarshalIndent(d, "", "  ")
			e.t.Fatalf("job %d ended %s, want %s:\n%s", id, d.Status, status, b)
		}
		return d.Status == status
	})
}

func isTerminal(s lifecycle.Status) bool { return s.Terminal() }

// codes turns attempts' exit codes into plain lists for comparison.
func codes(d contract.JobDetail) [][]int {
	var out [][]int
	for _, a := range d.Attempts {
		var cs []int
		for _, c := range a.ExitCodes {
			if c == nil {
				cs = append(cs, -1)
			} else {
				cs = append(cs, *c)
			}
		}
		out = append(out, cs)
	}
	return out
}

func killLeftovers(t *testing.T, home string) {
	for _, pid := range storm.ProcessesUnder(home) {
		t.Logf("killing leftover process %d", pid)
		_ = syscallKill(pid)
	}
}

// waitNoClusters waits until the local provider has no cluster left. A
// cluster is torn down after its job's end is recorded, so the status can
// be seen a moment before the teardown is done.
func (e *env) waitNoClusters(when string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ents, _ := os.ReadDir(filepath.Join(e.home, "local", "clusters"))
		if len(ents) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("clusters left 10s %s: %v", when, ents)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
