package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

func testService(t *testing.T) *Service {
	t.Helper()
	t.Setenv("SORTIE_POLL_INTERVAL", "")
	s, err := Open(context.Background(), t.TempDir(), clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.StartDaemon = func(context.Context, string) error { return nil }
	s.FindDaemon = nil
	return s
}

func TestNothingChangesWhenTheControllerCannotStart(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	task := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(task, []byte("run: train\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	running, err := s.Launch(ctx, contract.LaunchRequest{File: task})
	if err != nil {
		t.Fatal(err)
	}
	missing := errors.New("sortie-controller is neither beside this program nor on PATH")
	s.FindDaemon = func() error { return missing }
	s.StartDaemon = func(context.Context, string) error { return missing }

	if _, err := s.Launch(ctx, contract.LaunchRequest{File: task, Name: "second"}); !errors.Is(err, missing) {
		t.Errorf("launch without a controller: %v, want the controller's error", err)
	}
	if jobs, _ := s.Store.Jobs(ctx, store.JobFilter{}); len(jobs) != 1 {
		t.Errorf("%d jobs stored, want only the first", len(jobs))
	}
	if _, err := s.Cancel(ctx, contract.CancelRequest{IDs: []int64{running.ID}}); !errors.Is(err, missing) {
		t.Errorf("cancel without a controller: %v, want the controller's error", err)
	}
	if j, _ := s.Store.Job(ctx, running.ID); j.Status != lifecycle.Pending || j.CancelRequested {
		t.Errorf("job %s (cancel requested %t), want it left PENDING", j.Status, j.CancelRequested)
	}
}

func TestFollowingOutlivesALogTheControllerCannotRead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := testService(t)
	id, err := s.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte("{}")}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	kept := &store.Attempt{Cluster: "c", Cloud: "aws", InstanceIDs: []string{"i-1"}}
	a, err := s.Store.NewAttempt(ctx, id, 0, func(int) string { return "c" }, kept, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	calls := 0
	s.RemoteLogs = func(context.Context, int64, int, int, []int64) ([][]byte, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("the controller program could not be run")
		}
		cancel() // the second poll read it: stop following
		return [][]byte{[]byte("step 1\n")}, nil
	}
	var out bytes.Buffer
	err = s.Logs(ctx, contract.LogsRequest{ID: id, Follow: true, Poll: 1}, &out)
	if !errors.Is(err, context.Canceled) || out.String() != "step 1\n" {
		t.Errorf("follow returned %v after printing %q; want it to go on past the failed read and print step 1", err, out.String())
	}
	// Printed once, not following: the error is the command's.
	s.RemoteLogs = func(context.Context, int64, int, int, []int64) ([][]byte, error) {
		return nil, errors.New("the controller program could not be run")
	}
	if err := s.Logs(context.Background(), contract.LogsRequest{ID: id}, &bytes.Buffer{}); err == nil {
		t.Error("logs of a running attempt whose log cannot be read returned no error")
	}
}

// preemptedAttempt runs the next attempt of job id's task 0 on two aws
// nodes, from status, and ends it preempted, as policy decides (last: the
// job's last attempt).
func preemptedAttempt(t *testing.T, s *Service, id int64, status lifecycle.Status, policy strategy.Policy, last bool) {
	t.Helper()
	ctx := context.Background()
	a, err := s.Store.NewAttempt(ctx, id, 0, func(int) string { return "c" }, nil, status)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkLaunched(ctx, a.ID, "aws", "us-east-1", "us-east-1a", []string{"i-0", "i-1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	e := strategy.Ended{Outcome: strategy.Preempted, ExitCodes: []*int{nil, nil}}
	d := strategy.Decide(policy, strategy.Counters{}, e, last)
	if err := s.Store.EndAttempt(ctx, a, store.Observed{Outcome: e.Outcome, ExitCodes: e.ExitCodes}, d, store.Facts{}); err != nil {
		t.Fatal(err)
	}
}

// A node log that could not be kept is said so, with its reason, beside
// the logs that were, and the command fails instead of printing nothing.
func TestLogsSayWhichLogWasNotKept(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	id, err := s.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte("{}")}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	preemptedAttempt(t, s, id, lifecycle.Starting, strategy.Policy{}, true)
	dir := home.JobLogDir(s.Home, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(home.NodeLogMissing(s.Home, id, 0, 1, 0), []byte("node 0 was preempted when the attempt ended\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(home.NodeLog(s.Home, id, 0, 1, 1), []byte("step 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = s.Logs(ctx, contract.LogsRequest{ID: id}, &out)
	want := "sortie: the log of node 0 was not kept: node 0 was preempted when the attempt ended\n(node 1) step 1\n"
	if !errors.Is(err, contract.ErrLogNotKept) || out.String() != want {
		t.Errorf("logs printed %q and returned %v; want %q and ErrLogNotKept", out.String(), err, want)
	}
}

// A page of the queue: Limit jobs below the Before cursor, the newest
// finished ones interleaved by id with the unfinished ones as the whole
// listing has them, and the pages one after another make the listing.
func TestQueuePages(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	for i := range 7 {
		id, err := s.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte("{}")}, []store.NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 1 {
			endJob(t, s, id)
		}
	}
	for _, req := range []contract.QueueRequest{{Finished: 50}, {Finished: 1}, {All: true}} {
		whole, err := s.Queue(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var paged []int64
		req.Limit = 2
		for page := 0; ; page++ {
			got, err := s.Queue(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > 2 {
				t.Fatalf("%+v: a page of %d jobs, over the limit", req, len(got))
			}
			if len(got) == 0 {
				break
			}
			for _, j := range got {
				paged = append(paged, j.ID)
			}
			req.Before = got[len(got)-1].ID
		}
		var want []int64
		for _, j := range whole {
			want = append(want, j.ID)
		}
		if fmt.Sprint(paged) != fmt.Sprint(want) {
			t.Errorf("%+v: the pages listed %v, the whole listing %v", req, paged, want)
		}
	}
	if _, err := s.Queue(ctx, contract.QueueRequest{Limit: -1}); err == nil {
		t.Error("a negative limit was taken")
	}
}

// A home whose logs were kept in the old layout (a directory per task and
// attempt) reads as before, beside attempts kept in the flat one: each
// node's log and each note of a log not kept is found where it is, and a
// log in both places is read from the flat one.
func TestLogsReadTheOldLayoutBesideTheNew(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	id, err := s.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte("{}")}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 3; n++ {
		status := lifecycle.Starting
		if n > 1 {
			status = lifecycle.Recovering
		}
		preemptedAttempt(t, s, id, status, strategy.Policy{MaxRestartsOnErrors: 5}, n == 3)
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Attempt 1, kept by an earlier version: node 0's log, node 1 not kept.
	write(home.OldNodeLog(s.Home, id, 0, 1, 0), "old 0\n")
	write(home.OldNodeLog(s.Home, id, 0, 1, 1)+".missing", "node 1 was preempted when the attempt ended\n")
	// Attempt 2 in the flat layout.
	write(home.NodeLog(s.Home, id, 0, 2, 0), "new 0\n")
	write(home.NodeLog(s.Home, id, 0, 2, 1), "new 1\n")
	// Attempt 3 in both: kept again after the upgrade.
	write(home.OldNodeLog(s.Home, id, 0, 3, 0), "stale\n")
	write(home.NodeLog(s.Home, id, 0, 3, 0), "fresh\n")
	write(home.OldNodeLog(s.Home, id, 0, 3, 1), "old only\n")
	if got := home.NodeLog(s.Home, id, 0, 2, 1); got != filepath.Join(s.Home, "logs", strconv.FormatInt(id, 10), "task-0.attempt-2.node-1.log") {
		t.Errorf("NodeLog is %s, want logs/<job>/task-0.attempt-2.node-1.log", got)
	}
	for _, tc := range []struct {
		attempt int
		want    string
		err     error
	}{
		{1, "(node 0) old 0\nsortie: the log of node 1 was not kept: node 1 was preempted when the attempt ended\n", contract.ErrLogNotKept},
		{2, "(node 0) new 0\n(node 1) new 1\n", nil},
		{3, "(node 0) fresh\n(node 1) old only\n", nil},
	} {
		var out bytes.Buffer
		err := s.Logs(ctx, contract.LogsRequest{ID: id, Attempt: tc.attempt}, &out)
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) || out.String() != tc.want {
			t.Errorf("attempt %d: printed %q, returned %v; want %q and %v", tc.attempt, out.String(), err, tc.want, tc.err)
		}
	}
}
