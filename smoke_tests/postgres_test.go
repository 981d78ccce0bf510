package smoke_tests

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"sortie/controller/store/pgtest"
)

// simRestart is a sim job whose first attempt exits 29, a listed code:
// sortie restarts it, and the second attempt succeeds.
const simRestart = `
resources:
  cloud: sim
  job_recovery:
    recover_on_exit_codes: [29]
run: train
`

const simConfig = "sim:\n  run_time: 300ms\n  exit_codes:\n  - {code: 29, share: 1, attempt: 1}\n"

// Sim jobs run end to end on a PostgreSQL store: the controller started
// with --store, the CLI pointed at the same database with SORTIE_STORE.
// Each job restarts on its listed exit code and succeeds, nothing is kept
// in the home's state.db, and `jobs queue -o json` has the shape it has on
// SQLite.
func TestSimJobsOnPostgres(t *testing.T) {
	srv, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrNoServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	url := srv.NewDatabase(t)

	pg := newEnv(t, "SORTIE_STORE="+url)
	lite := newEnv(t)
	for _, e := range []*env{pg, lite} {
		if err := os.MkdirAll(e.home, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(simConfig), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The PostgreSQL home's controller is started by hand, told the store
	// by its flag alone; the CLI finds it running and starts none.
	ctl := exec.Command(filepath.Join(filepath.Dir(pg.bin), "sortie-controller"), "run", "--store", url)
	ctl.Env = []string{"SORTIE_HOME=" + pg.home, "SORTIE_POLL_INTERVAL=100ms",
		"SORTIE_RESTART_BACKOFF_INITIAL=100ms", "SORTIE_RESTART_BACKOFF_MAX=500ms", "PATH=" + os.Getenv("PATH"), "HOME=" + pg.home}
	logf, err := os.Create(filepath.Join(t.TempDir(), "controller.out"))
	if err != nil {
		t.Fatal(err)
	}
	ctl.Stdout, ctl.Stderr = logf, logf
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- ctl.Wait() }()
	defer func() {
		pg.run("controller", "stop")
		select {
		case <-stopped:
		case <-time.After(20 * time.Second):
			ctl.Process.Kill()
			<-stopped
			t.Errorf("the controller did not stop")
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("controller output:\n%s", tail(string(b), 4000))
		}
	}()
	waitRunning(t, pg)

	queues := map[string][]map[string]any{}
	for name, e := range map[string]*env{"postgres": pg, "sqlite": lite} {
		task := e.write("task.yaml", simRestart)
		var ids []int64
		for range 3 {
			ids = append(ids, e.launch(task))
		}
		for _, id := range ids {
			d := e.waitStatus(id, "SUCCEEDED")
			if diff := cmp.Diff([][]int{{29}, {0}}, codes(d)); diff != "" || d.RecoveryCount != 1 || d.RestartsOnErrors != 0 {
				t.Errorf("%s job %d: recovery_count %d, restarts_on_errors %d, exit codes (-want +got):\n%s", name, id, d.RecoveryCount, d.RestartsOnErrors, diff)
			}
		}
		var q []map[string]any
		if err := json.Unmarshal([]byte(e.must("jobs", "queue", "-a", "-o", "json").stdout), &q); err != nil {
			t.Fatal(err)
		}
		if len(q) != 3 {
			t.Fatalf("%s queue: %d jobs, want 3", name, len(q))
		}
		queues[name] = q
	}
	if diff := cmp.Diff(shape(queues["sqlite"]), shape(queues["postgres"])); diff != "" {
		t.Errorf("jobs queue -o json on SQLite (-) and PostgreSQL (+) differ in shape:\n%s", diff)
	}
	for i, j := range queues["postgres"] {
		if j["status"] != "SUCCEEDED" || j["recovery_count"] != float64(1) {
			t.Errorf("PostgreSQL queue job %d: %v", i, j)
		}
	}

	// The jobs are in the database, not in a file of the home.
	if _, err := os.Stat(filepath.Join(pg.home, "state.db")); !os.IsNotExist(err) {
		t.Errorf("the PostgreSQL home has a state.db (%v)", err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, attempts int
	if err := conn.QueryRow(ctx, `SELECT COUNT(*), (SELECT COUNT(*) FROM attempts) FROM jobs WHERE status = 'SUCCEEDED'`).Scan(&n, &attempts); err != nil || n != 3 || attempts != 6 {
		t.Errorf("PostgreSQL holds %d SUCCEEDED jobs and %d attempts (%v), want 3 and 6", n, attempts, err)
	}
}

// waitRunning waits for e's controller to answer `controller status`.
func waitRunning(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.run("controller", "status").code != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the controller did not start: %+v", e.run("controller", "status"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shape is each job's keys with the JSON kind of their values, sorted:
// what a reader of -o json relies on, whatever the ids and times.
func shape(jobs []map[string]any) []string {
	seen := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			seen[prefix+": object"] = true
			for k, x := range v {
				walk(prefix+"."+k, x)
			}
		case []any:
			seen[prefix+": list"] = true
			for _, x := range v {
				walk(prefix+"[]", x)
			}
		case string:
			seen[prefix+": string"] = true
		case float64:
			seen[prefix+": number"] = true
		case bool:
			seen[prefix+": bool"] = true
		case nil:
			seen[prefix+": null"] = true
		}
	}
	for _, j := range jobs {
		walk("job", j)
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
