package smoke_tests

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sortie/smoke_tests/bench/suite"
	"sortie/smoke_tests/chaos/storm"
)

// The benchmark suite, run small so that it cannot rot: every group runs
// against the real binary, and the test checks what the jobs ended with,
// never how fast.

func progress(t *testing.T) io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

func TestBenchSim(t *testing.T) {
	// Plainly, then with every failure verdict on: the jobs end alike.
	for _, allOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "all-on"}[allOn], func(t *testing.T) { benchSim(t, allOn) })
	}
}

func benchSim(t *testing.T, allOn bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := suite.SimOptions{Bin: binary(t), Home: filepath.Join(t.TempDir(), "home"), Jobs: 200, RunTime: 3 * time.Second,
		ExitShare: 0.10, PreemptShare: 0.05, Seed: 7, AllOn: allOn, PollInterval: 250 * time.Millisecond, Timeout: 2 * time.Minute, Progress: progress(t)}
	r, err := suite.RunSim(ctx, o)
	if err != nil {
		logTail(t, o.Home)
		t.Fatal(err)
	}
	if r.Statuses["SUCCEEDED"] != o.Jobs {
		logTail(t, o.Home)
		t.Fatalf("statuses %v, want all %d SUCCEEDED", r.Statuses, o.Jobs)
	}
	// Each job whose first attempt exits 29 or is preempted recovers
	// exactly once; the seed makes that a known number.
	if r.WantRecoveries < 10 {
		t.Fatalf("the seed picks only %d jobs to recover; the test would check little", r.WantRecoveries)
	}
	if r.Recoveries != r.WantRecoveries {
		t.Errorf("recoveries %d, want %d", r.Recoveries, r.WantRecoveries)
	}
	if len(r.Decisions) != r.WantRecoveries {
		t.Errorf("the sim recorded %d decisions, want one per recovery (%d)", len(r.Decisions), r.WantRecoveries)
	}
	if r.Usage.PeakRSSKiB <= 0 || r.Usage.CPU <= 0 {
		t.Errorf("usage %+v: nothing measured", r.Usage)
	}
}

func logTail(t *testing.T, home string) {
	if b, err := os.ReadFile(filepath.Join(home, "controller.log")); err == nil {
		t.Logf("controller log:\n%s", tail(string(b), 6000))
	}
}

func TestBenchLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := suite.LocalOptions{Bin: binary(t), Home: filepath.Join(t.TempDir(), "home"), Jobs: 20, Parallel: 4, Timeout: 2 * time.Minute, Progress: progress(t)}
	t.Cleanup(func() { killLeftovers(t, o.Home) })
	r, err := suite.RunLocal(ctx, o)
	if err != nil {
		logTail(t, o.Home)
		t.Fatal(err)
	}
	if r.Statuses["SUCCEEDED"] != o.Jobs {
		t.Errorf("statuses %v, want all %d SUCCEEDED", r.Statuses, o.Jobs)
	}
	if r.Plain <= 0 || r.Sortie <= 0 {
		t.Errorf("wall times sortie %s, plain %s: nothing measured", r.Sortie, r.Plain)
	}
	if r.AgentRSSKiB <= 0 || r.TaskRSSKiB <= 0 {
		t.Errorf("agent RSS %d KiB, its task's bash %d KiB: nothing measured", r.AgentRSSKiB, r.TaskRSSKiB)
	}
}

func TestBenchQueueAndLaunch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	q := suite.QueueOptions{Bin: binary(t), Home: filepath.Join(t.TempDir(), "queue"), Jobs: 3000, Running: 300, Runs: 2, Progress: progress(t)}
	if err := suite.BuildQueueStore(ctx, q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killLeftovers(t, q.Home) })
	r, err := suite.RunQueue(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	// The store's RUNNING jobs make the first queue start the home's
	// controller; the run stops it again.
	if left := storm.ProcessesUnder(q.Home); len(left) > 0 {
		t.Errorf("the queue run left processes behind in its home: %v", left)
	}
	if r.StatusJobs != q.Running {
		t.Errorf("--status RUNNING printed %d jobs, want %d", r.StatusJobs, q.Running)
	}
	// The default view: every unfinished job, the 50 newest finished ones
	// and a header.
	if want := q.Running + 50 + 1; r.DefaultLines != want {
		t.Errorf("the default view printed %d lines, want %d", r.DefaultLines, want)
	}
	if len(r.StatusRuns) != q.Runs || len(r.DefaultRuns) != q.Runs {
		t.Errorf("timed %d and %d runs, want %d of each", len(r.StatusRuns), len(r.DefaultRuns), q.Runs)
	}

	home := filepath.Join(t.TempDir(), "launch")
	t.Cleanup(func() { killLeftovers(t, home) })
	l, err := suite.RunLaunchCLI(ctx, suite.LaunchOptions{Bin: binary(t), Home: home, Runs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Runs) != 3 || len(l.IDs) != 4 || l.IDs[3] != l.IDs[0]+3 {
		t.Errorf("launch: runs %v ids %v, want 3 timed runs of 4 launches with consecutive ids", l.Runs, l.IDs)
	}
}

func TestBenchCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := suite.CancelOptions{Bin: binary(t), Home: filepath.Join(t.TempDir(), "home"), Jobs: 100, Churn: 3,
		ChurnRunTime: 300 * time.Millisecond, Baseline: 2 * time.Second, Timeout: time.Minute, Progress: progress(t)}
	r, err := suite.RunCancel(ctx, o)
	if err != nil {
		logTail(t, o.Home)
		t.Fatal(err)
	}
	if r.Cancelled != o.Jobs || r.ChurnActive != o.Churn {
		t.Errorf("%d jobs cancelled, %d restarting jobs going; want %d and %d", r.Cancelled, r.ChurnActive, o.Jobs, o.Churn)
	}
	if len(r.BaselineDecisions) == 0 {
		t.Error("no decision of the restarting jobs was timed before the cancel")
	}
}

func TestBenchNotice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	o := suite.NoticeOptions{Bin: binary(t), Home: filepath.Join(t.TempDir(), "home"), Jobs: 3, Agents: 3, Rounds: 1,
		Timeout: time.Minute, Progress: progress(t)}
	t.Cleanup(func() {
		killLeftovers(t, filepath.Join(o.Home, "local"))
		killLeftovers(t, filepath.Join(o.Home, "imds"))
	})
	r, err := suite.RunNotice(ctx, o)
	if err != nil {
		logTail(t, filepath.Join(o.Home, "local"))
		t.Fatal(err)
	}
	if r.Statuses["SUCCEEDED"] != o.Jobs {
		t.Errorf("statuses %v, want all %d SUCCEEDED", r.Statuses, o.Jobs)
	}
	if len(r.LocalSigterm) != o.Jobs || len(r.Replacement) != o.Jobs || len(r.IMDSSigterm) != o.Agents {
		t.Fatalf("samples: %d local, %d replacement, %d metadata simulator; want %d, %d, %d",
			len(r.LocalSigterm), len(r.Replacement), len(r.IMDSSigterm), o.Jobs, o.Jobs, o.Agents)
	}
	for _, ds := range [][]time.Duration{r.LocalSigterm, r.Replacement, r.IMDSSigterm} {
		for _, d := range ds {
			if d <= 0 {
				t.Errorf("a sample of %s: the SIGTERM or the launch came before the notice", d)
			}
		}
	}
}

// The api group's short run: launches through a server and on the local
// path, one beside the other, each job stored where it was sent.
func TestBenchAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	home := filepath.Join(t.TempDir(), "api")
	t.Cleanup(func() {
		killLeftovers(t, filepath.Join(home, "server"))
		killLeftovers(t, filepath.Join(home, "local"))
	})
	r, err := suite.RunAPILaunch(ctx, suite.LaunchOptions{Bin: binary(t), Home: home, Runs: 3})
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]*suite.LaunchResult{"api": r.API, "local": r.Local} {
		if len(l.Runs) != 3 || len(l.IDs) != 4 || l.IDs[3] != l.IDs[0]+3 {
			t.Errorf("%s: runs %v ids %v, want 3 timed runs of 4 launches with consecutive ids in its own store", name, l.Runs, l.IDs)
		}
	}
}

// The storage group, small: every file of the checkpoint directory is
// uploaded by both, and the resync of unchanged files moves nothing.
func TestBenchStorage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := suite.StorageOptions{Home: filepath.Join(t.TempDir(), "home"), Files: 4, FileBytes: 1 << 20, Unchanged: 300, Progress: progress(t)}
	r, err := suite.RunStorage(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.SyncedFiles != o.Files || r.ResyncMoved != 0 || r.Sync <= 0 || r.TransferManager <= 0 || r.Resync <= 0 {
		t.Errorf("result %+v: want %d files synced, nothing moved on the resync", r, o.Files)
	}
}

// The dashboard group, small: a store of 60 running jobs; the queue page
// and the API's page are each timed, and the page shows a page of 50.
func TestBenchDashboard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := suite.QueueOptions{Home: filepath.Join(t.TempDir(), "dashboard"), Jobs: 120, Running: 60, Runs: 3, Progress: progress(t)}
	if err := suite.BuildQueueStore(ctx, o); err != nil {
		t.Fatal(err)
	}
	r, err := suite.RunDashboardQueue(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows != 50 || len(r.PageRuns) != 3 || len(r.APIRuns) != 3 || r.Page <= 0 || r.API <= 0 {
		t.Errorf("result %+v: want a page of 50 jobs, 3 timed runs of each", r)
	}
}
