package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/daemon"
	"sortie/controller/service"
)

// fakeControllerEnv makes this test binary, run as `sortie-controller
// run`, a controller that holds the home's lock until it is stopped.
const fakeControllerEnv = "SORTIE_CLI_TEST_FAKE_CONTROLLER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeControllerEnv) == "1" && len(os.Args) > 1 && os.Args[1] == "run" {
		err := daemon.Run(context.Background(), os.Getenv("SORTIE_HOME"),
			func(ctx context.Context) error { <-ctx.Done(); return nil }, func() {})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// reviveHome is a home with one unfinished job stored while no controller
// ran, and a factory whose service is the real one over it; its
// controller program is this test binary (fakeControllerEnv).
func reviveHome(t *testing.T) (string, func(args ...string) (string, string, int)) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SORTIE_CONTROLLER_BIN", self)
	t.Setenv(fakeControllerEnv, "1")
	h := filepath.Join(t.TempDir(), "home")
	t.Setenv("SORTIE_HOME", h)
	t.Cleanup(func() {
		if _, err := daemon.Stop(context.Background(), h); err != nil {
			t.Errorf("stop the controller: %v", err)
		}
	})
	run := func(args ...string) (string, string, int) {
		f, out, errb := testFactory()
		f.Getenv = func(k string) string { return map[string]string{"SORTIE_HOME": h}[k] }
		f.Service = func(ctx context.Context) (Service, error) { return service.Open(ctx, h, clouds.Light()) }
		code := Execute(f, args)
		return out.String(), errb.String(), code
	}
	return h, run
}

// storeUnfinished stores a PENDING job without starting a controller, as a
// controller killed with -9 leaves its jobs.
func storeUnfinished(t *testing.T, h string) int64 {
	t.Helper()
	ctx := context.Background()
	s, err := service.Open(ctx, h, clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.StartDaemon = func(context.Context, string) error { return nil }
	task := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(task, []byte("run: echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := s.Launch(ctx, contract.LaunchRequest{File: task})
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

func TestReadingVerbsStartADeadController(t *testing.T) {
	h, run := reviveHome(t)
	id := storeUnfinished(t, h)
	if p := daemon.Running(h); p != 0 {
		t.Fatalf("controller running (%d) before the test", p)
	}

	stdout, stderr, code := run("jobs", "queue", "-o", "json")
	if code != 0 {
		t.Fatalf("queue: exit %d: %s", code, stderr)
	}
	pid := daemon.Running(h)
	if pid <= 0 {
		t.Fatalf("no controller runs after jobs queue (Running = %d); stderr: %s", pid, stderr)
	}
	want := fmt.Sprintf("sortie: the controller was not running; started it (pid %d) to go on with 1 unfinished job\n", pid)
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	var jobs []contract.JobView
	if err := json.Unmarshal([]byte(stdout), &jobs); err != nil || len(jobs) != 1 || jobs[0].ID != id {
		t.Errorf("stdout is not the queue alone (%v): %s", err, stdout)
	}

	// A running controller is left alone, and nothing is said.
	for _, args := range [][]string{{"jobs", "queue"}, {"jobs", "show", fmt.Sprint(id)}, {"jobs", "logs", fmt.Sprint(id)}} {
		if _, stderr, code := run(args...); code != 0 || strings.Contains(stderr, "controller") {
			t.Errorf("%v with the controller running: exit %d, stderr %q", args, code, stderr)
		}
		if p := daemon.Running(h); p != pid {
			t.Errorf("%v: controller %d, want %d left running", args, p, pid)
		}
	}

	// show and logs start it too.
	for _, args := range [][]string{{"jobs", "show", fmt.Sprint(id)}, {"jobs", "logs", fmt.Sprint(id)}} {
		if _, err := daemon.Stop(context.Background(), h); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(args...)
		if code != 0 || !strings.Contains(stderr, "sortie: the controller was not running; started it (pid ") || daemon.Running(h) <= 0 {
			t.Errorf("%v with no controller: exit %d, stderr %q, controller %d", args, code, stderr, daemon.Running(h))
		}
	}
}

func TestReadingVerbsStartNoControllerWithoutUnfinishedJobs(t *testing.T) {
	h, run := reviveHome(t)
	if _, stderr, code := run("jobs", "queue"); code != 0 || stderr != "No jobs.\n" {
		t.Errorf("queue of an empty home: exit %d, stderr %q", code, stderr)
	}
	if p := daemon.Running(h); p != 0 {
		t.Errorf("a controller (%d) was started for no job", p)
	}
}
