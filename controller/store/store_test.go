package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/controller/store/pgtest"
	"sortie/strategy"
	"sortie/strategy/clocktest"
)

// pgServer is the test binary's PostgreSQL server; nil when none is
// installed (the PostgreSQL half of each test skips, saying so).
var pgServer *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pgServer)) }

// A backend is a database the store's tests run on.
type backend struct {
	name string
	// newStore returns the URL of a new, empty store for t.
	newStore func(t *testing.T) string
}

var (
	sqliteBackend = backend{"sqlite", func(t *testing.T) string {
		return "sqlite:" + filepath.Join(t.TempDir(), "state.db")
	}}
	postgresBackend = backend{"postgres", func(t *testing.T) string {
		return pgtest.Need(t, pgServer).NewDatabase(t)
	}}
)

// onEach runs test on SQLite and on PostgreSQL, one subtest each: the
// store's tests are one conformance suite of both.
func onEach(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range []backend{sqliteBackend, postgresBackend} {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// openTest opens a new store on b with a clock that moves a second at
// each reading, and returns it with its URL.
func openTest(t *testing.T, b backend) (*Store, string) {
	t.Helper()
	u := b.newStore(t)
	clk := clocktest.NewStepping(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Second)
	s, err := OpenURL(context.Background(), u, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, u
}

func code(n int) *int { return &n }

func clusterName(job int64, task int) func(int) string {
	return func(a int) string { return fmt.Sprintf("sortie-%d-%d-%d", job, task, a) }
}

func TestReopenKeepsData(t *testing.T) { onEach(t, testReopenKeepsData) }

func testReopenKeepsData(t *testing.T, b backend) {
	ctx := context.Background()
	s, path := openTest(t, b)
	id, err := s.CreateJob(ctx, &Job{Name: "a", Spec: []byte(`{}`)}, []NewTask{{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := OpenURL(ctx, path, nil)
	if err != nil {
		t.Fatalf("reopen (migrations must be idempotent): %v", err)
	}
	defer s2.Close()
	j, err := s2.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "a" || j.Status != lifecycle.Pending || j.RootID != id {
		t.Fatalf("got %+v", j)
	}
}

func TestAttemptLifecycle(t *testing.T) { onEach(t, testAttemptLifecycle) }

func testAttemptLifecycle(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, err := s.CreateJob(ctx, &Job{Name: "train", Spec: []byte(`{}`), InputKey: "abc123"}, []NewTask{{Name: "t0"}, {Name: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	a1, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if a1.Attempt != 1 || a1.Cluster != fmt.Sprintf("sortie-%d-0-1", id) || a1.State != lifecycle.AttemptLaunching {
		t.Fatalf("first attempt: %+v", a1)
	}
	if err := s.MarkLaunched(ctx, a1.ID, "local", "local", "local-a", []string{"n0", "n1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRunning(ctx, a1); err != nil {
		t.Fatal(err)
	}
	seen := Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(0), code(29)}, Reason: "node 1 exited 29"}
	restart := strategy.Decision{Action: strategy.Restart, Counters: strategy.Counters{RecoveryCount: 1},
		Rule: strategy.RuleExitCodeMatched, Reason: "exit code 29 matched recover_on_exit_codes [29]"}
	backoff := time.Date(2026, 1, 2, 3, 10, 0, 0, time.UTC)
	if err := s.EndAttempt(ctx, a1, seen, restart, Facts{NextActionAt: &backoff}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndAttempt(ctx, a1, seen, restart, Facts{}); !errors.Is(err, ErrAttemptEnded) {
		t.Fatalf("second end: got %v, want ErrAttemptEnded", err)
	}
	j, _ := s.Job(ctx, id)
	if diff := cmp.Diff([]*int{code(0), code(29)}, j.ExitCodes); diff != "" {
		t.Errorf("job exit codes (-want +got):\n%s", diff)
	}
	if j.RecoveryCount != 1 || j.Status != lifecycle.Recovering || j.StartedAt == nil || j.StatusReason != restart.Reason ||
		j.NextActionAt == nil || !j.NextActionAt.Equal(backoff) || j.FailureReason != "" {
		t.Errorf("job after restart decision: %+v", j)
	}
	as, _ := s.Attempts(ctx, id)
	if a := as[0]; a.State != lifecycle.AttemptEnded || a.Outcome != "user_failure" || a.Reason != "node 1 exited 29" ||
		a.Action != "restart" || a.Decision != restart.Reason || a.EndedAt == nil {
		t.Errorf("ended attempt: %+v", a)
	}
	// A restart reuses the cluster.
	prev, _ := s.LastAttempt(ctx, id, 0)
	a2, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), prev, lifecycle.Recovering)
	if err != nil {
		t.Fatal(err)
	}
	if a2.Attempt != 2 || a2.Cluster != a1.Cluster || a2.State != lifecycle.AttemptStarting || a2.Zone != "local-a" {
		t.Fatalf("reused attempt: %+v", a2)
	}
	if err := s.MarkRunning(ctx, a2); err != nil {
		t.Fatal(err)
	}
	if err := s.EndAttempt(ctx, a2, Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0), code(0)}, Reason: "every node exited 0"},
		strategy.Decision{Action: strategy.NextTask, Counters: strategy.Counters{RecoveryCount: 1}, Reason: "task succeeded; starting the next task"},
		Facts{NextActionAt: &backoff}); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Job(ctx, id)
	if j.CurrentTask != 1 || j.Status != lifecycle.Starting || j.NextActionAt != nil || j.StatusReason != "" {
		t.Fatalf("job after its first task: %+v", j)
	}
	a3, err := s.NewAttempt(ctx, id, 1, clusterName(id, 1), nil, lifecycle.Starting)
	if err != nil || a3.Attempt != 1 {
		t.Fatalf("task 1 attempt: %+v %v", a3, err)
	}
	running(t, s, a3)
	if err := s.EndAttempt(ctx, a3, Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1)}, Reason: "node 0 exited 1"},
		strategy.Decision{Action: strategy.Fail, Counters: strategy.Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed, Reason: "exit code 1"},
		Facts{TaskName: "t1", LogPath: "/logs/1/1/1"}); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Job(ctx, id)
	if j.Status != lifecycle.Failed || j.EndedAt == nil || j.RestartsOnErrors != 1 || j.RecoveryCount != 1 || j.FailureReason != "exit code 1" {
		t.Fatalf("ended job: %+v", j)
	}
	// A terminal status never changes.
	if err := s.FinishJob(ctx, id, cancelled); !errors.Is(err, ErrTerminal) {
		t.Fatalf("finish of an ended job: %v", err)
	}
	if _, err := s.NewAttempt(ctx, id, 1, clusterName(id, 1), nil, lifecycle.Starting); !errors.Is(err, ErrTerminal) {
		t.Fatalf("new attempt of an ended job: %v", err)
	}
	if marked, _ := s.RequestCancel(ctx, []int64{id}); len(marked) != 0 {
		t.Fatalf("cancel marked an ended job")
	}
	// FAILED records the job's inputs as a known failure, read with the
	// job's name and the position of the task that failed.
	f, err := s.KnownFailure(ctx, "abc123")
	if err != nil || f == nil {
		t.Fatalf("known failure: %+v %v", f, err)
	}
	want := &KnownFailure{InputKey: "abc123", JobID: id, TaskName: "t1", Status: lifecycle.Failed, ExitCodes: []*int{code(1)},
		LogPath: "/logs/1/1/1", RecordedAt: f.RecordedAt, JobName: "train", Task: code(1)}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("known failure (-want +got):\n%s", diff)
	}
	as, _ = s.Attempts(ctx, id)
	if len(as) != 3 {
		t.Fatalf("attempts = %d", len(as))
	}
}

func TestRetryChain(t *testing.T) { onEach(t, testRetryChain) }

func testRetryChain(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	orig, _ := s.CreateJob(ctx, &Job{Name: "lab-1", Spec: []byte(`{}`)}, []NewTask{{}})
	if _, err := s.CreateJob(ctx, &Job{Name: "lab-1", Spec: []byte(`{}`), RetryOf: &orig}, []NewTask{{}}); !errors.Is(err, ErrNotTerminal) {
		t.Fatalf("retry of a pending job: %v", err)
	}
	endFailed(t, s, orig, "boom")
	r1, err := s.CreateJob(ctx, &Job{Name: "lab-1", Spec: []byte(`{}`), RetryOf: &orig, Trigger: "manual", RetryReason: "flaky"}, []NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	endFailed(t, s, r1, "")
	r2, err := s.CreateJob(ctx, &Job{Name: "lab-1", Spec: []byte(`{}`), RetryOf: &r1, Trigger: "manual"}, []NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	j2, _ := s.Job(ctx, r2)
	if j2.RootID != orig || *j2.RetryOf != r1 || j2.Trigger != "manual" {
		t.Fatalf("retry of retry: %+v", j2)
	}
	j0, _ := s.Job(ctx, orig)
	if j0.RetriedIn == nil || *j0.RetriedIn != r1 || j0.Status != lifecycle.Failed {
		t.Fatalf("original: %+v", j0)
	}
	chain, _ := s.Chain(ctx, orig)
	if len(chain) != 3 {
		t.Fatalf("chain length %d", len(chain))
	}
	got, _ := s.Jobs(ctx, JobFilter{NameGlob: "lab-*", Statuses: []lifecycle.Status{lifecycle.Failed}})
	if len(got) != 2 {
		t.Fatalf("filter: %d jobs", len(got))
	}
	// A page below a cursor: the jobs under the id, newest first, as many
	// as the limit.
	got, err = s.Jobs(ctx, JobFilter{BeforeID: r2, Limit: 1})
	if err != nil || len(got) != 1 || got[0].ID != r1 {
		t.Fatalf("the page before %d: %v %+v, want job %d alone", r2, err, got, r1)
	}
	if got, _ = s.Jobs(ctx, JobFilter{BeforeID: orig}); len(got) != 0 {
		t.Fatalf("the page before the first job: %d jobs", len(got))
	}
}

func TestForgetFailure(t *testing.T) { onEach(t, testForgetFailure) }

func testForgetFailure(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	for _, k := range []string{"aa11", "aa22", "bb33"} {
		id, _ := s.CreateJob(ctx, &Job{Name: "a", Spec: []byte(`{}`), InputKey: k}, []NewTask{{}})
		endFailed(t, s, id, "exit code 1")
	}
	if _, err := s.ForgetFailure(ctx, "aa"); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("ambiguous prefix: %v", err)
	}
	if k, err := s.ForgetFailure(ctx, "aa2"); err != nil || k != "aa22" {
		t.Fatalf("forget: %q %v", k, err)
	}
	if _, err := s.ForgetFailure(ctx, "zz"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if n, _ := s.ForgetAllFailures(ctx); n != 2 {
		t.Fatalf("forget all removed %d", n)
	}
}

func TestNeverTwoLiveAttempts(t *testing.T) { onEach(t, testNeverTwoLiveAttempts) }

func testNeverTwoLiveAttempts(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, _ := s.CreateJob(ctx, &Job{Name: "a", Spec: []byte(`{}`)}, []NewTask{{}, {}})
	a, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting); !errors.Is(err, ErrOpenAttempt) {
		t.Fatalf("second attempt while the first runs: %v", err)
	}
	// A job with a running attempt is not ended around it.
	if err := s.FinishJob(ctx, id, cancelled); !errors.Is(err, ErrOpenAttempt) {
		t.Fatalf("finish with an open attempt: %v", err)
	}
	if _, err := s.RequestCancel(ctx, []int64{id}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndAttempt(ctx, a, Observed{Outcome: strategy.NodeLost, Reason: "cluster vanished before the task started"},
		strategy.Decision{Action: strategy.Recover, Counters: strategy.Counters{RecoveryCount: 1}, Reason: "node lost in local"}, Facts{}); err != nil {
		t.Fatal(err)
	}
	// Its attempt ended asking for a restart, but the job is being
	// cancelled: it stays CANCELLING until the cancel ends it.
	if j, _ := s.Job(ctx, id); j.Status != lifecycle.Cancelling || j.StatusReason != "cancel requested" {
		t.Fatalf("job being cancelled after its attempt ended: %s (%s)", j.Status, j.StatusReason)
	}
	if _, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting); !errors.Is(err, ErrCancelRequested) {
		t.Fatalf("new attempt of a job being cancelled: %v", err)
	}
	if err := s.FinishJob(ctx, id, cancelled); err != nil {
		t.Fatal(err)
	}
	j, _ := s.Job(ctx, id)
	tasks, _ := s.Tasks(ctx, id)
	if j.Status != lifecycle.Cancelled || j.FailureReason != "" || j.EndedAt == nil || j.RecoveryCount != 1 ||
		tasks[0].Status != lifecycle.Cancelled || tasks[1].Status != lifecycle.Cancelled {
		t.Fatalf("cancelled job: %+v; tasks %s, %s", j, tasks[0].Status, tasks[1].Status)
	}
}

func TestEndingTheJobSkipsTheRestOfThePipeline(t *testing.T) {
	onEach(t, testEndingTheJobSkipsTheRestOfThePipeline)
}

func testEndingTheJobSkipsTheRestOfThePipeline(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, _ := s.CreateJob(ctx, &Job{Name: "p", Spec: []byte(`{}`)}, []NewTask{{}, {}, {}})
	a, _ := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	running(t, s, a)
	if err := s.EndAttempt(ctx, a, Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1)}},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "exit code 1"}, Facts{}); err != nil {
		t.Fatal(err)
	}
	tasks, _ := s.Tasks(ctx, id)
	var got []lifecycle.Status
	for _, task := range tasks {
		got = append(got, task.Status)
	}
	if diff := cmp.Diff([]lifecycle.Status{lifecycle.Failed, lifecycle.Cancelled, lifecycle.Cancelled}, got); diff != "" {
		t.Errorf("task statuses (-want +got):\n%s", diff)
	}
}

// running launches a and starts its task: the job is RUNNING.
func running(t *testing.T, s *Store, a *Attempt) {
	t.Helper()
	ctx := context.Background()
	if err := s.MarkLaunched(ctx, a.ID, "local", "local", "local-a", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
}

// endFailed runs a first attempt of job id that fails for good.
func endFailed(t *testing.T, s *Store, id int64, reason string) {
	t.Helper()
	ctx := context.Background()
	a, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	running(t, s, a)
	if err := s.EndAttempt(ctx, a, Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1)}, Reason: "node 0 exited 1"},
		strategy.Decision{Action: strategy.Fail, Counters: strategy.Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed, Reason: reason},
		Facts{}); err != nil {
		t.Fatal(err)
	}
}

// cancelled is the decision that ends a job cancelled by the user.
var cancelled = strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Rule: strategy.RuleCancelled, Reason: "cancelled by user"}

// A job whose first tasks are linked to another job's runs stores them
// SUCCEEDED with the link and starts at the first task that runs; links
// that are not the first tasks, or are every task, are refused and store
// nothing.
func TestLinkedTasks(t *testing.T) { onEach(t, testLinkedTasks) }

func testLinkedTasks(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	orig, err := s.CreateJob(ctx, &Job{Name: "p", Spec: []byte(`{}`)}, []NewTask{{Name: "a"}, {Name: "b"}, {Name: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.CreateJob(ctx, &Job{Name: "p", Spec: []byte(`{}`)},
		[]NewTask{{Name: "a", Linked: &TaskRef{Job: orig, Task: 0}}, {Name: "b", Linked: &TaskRef{Job: orig, Task: 1}}, {Name: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := s.Job(ctx, id)
	if j.CurrentTask != 2 || j.Status != lifecycle.Pending {
		t.Errorf("job at task %d, %s; want task 2, PENDING", j.CurrentTask, j.Status)
	}
	tasks, _ := s.Tasks(ctx, id)
	var got []string
	for _, task := range tasks {
		link := "-"
		if task.Linked != nil {
			link = fmt.Sprintf("%d/%d", task.Linked.Job, task.Linked.Task)
		}
		got = append(got, fmt.Sprintf("%s %s %s", task.Name, task.Status, link))
	}
	want := []string{"a SUCCEEDED 1/0", "b SUCCEEDED 1/1", "c PENDING -"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}

	for name, tasks := range map[string][]NewTask{
		"a gap":     {{Name: "a"}, {Name: "b", Linked: &TaskRef{Job: orig, Task: 1}}},
		"all of it": {{Name: "a", Linked: &TaskRef{Job: orig, Task: 0}}},
	} {
		if _, err := s.CreateJob(ctx, &Job{Name: "bad", Spec: []byte(`{}`)}, tasks); !errors.Is(err, ErrLinkNotAPrefix) {
			t.Errorf("%s: %v, want ErrLinkNotAPrefix", name, err)
		}
	}
	if jobs, _ := s.Jobs(ctx, JobFilter{}); len(jobs) != 2 {
		t.Errorf("%d jobs stored, want the 2 good ones", len(jobs))
	}
}

// CancelRequested reads the one column a step reads again: false until a
// cancel is asked for, true after, and ErrNotFound for no such job.
func TestCancelRequested(t *testing.T) { onEach(t, testCancelRequested) }

func testCancelRequested(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, err := s.CreateJob(ctx, &Job{Name: "x", Spec: []byte(`{}`)}, []NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.CancelRequested(ctx, id); err != nil || got {
		t.Fatalf("a new job: CancelRequested = %v, %v; want false, nil", got, err)
	}
	if _, err := s.RequestCancel(ctx, []int64{id}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.CancelRequested(ctx, id); err != nil || !got {
		t.Fatalf("after RequestCancel: CancelRequested = %v, %v; want true, nil", got, err)
	}
	if got, err := s.CancelRequested(ctx, id+1000); !errors.Is(err, ErrNotFound) || got {
		t.Fatalf("no such job: CancelRequested = %v, %v; want false, ErrNotFound", got, err)
	}
}
