package service

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy"
)

// keep_on_failure above config.yaml's ceiling is refused at launch, at a
// dry run and in a retry's --set, naming the field, the value and the
// ceiling; at the ceiling it is taken.
func TestKeepOnFailureAboveTheCeilingIsRefused(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	if got := s.Config.Controller.MaxKeepOnFailure.D(); got != 24*time.Hour {
		t.Fatalf("default ceiling %v, want 24h", got)
	}
	s.Config.Controller.MaxKeepOnFailure = config.Duration(2 * time.Hour)
	root := project(t, map[string]string{
		"over.yaml": "resources: {job_recovery: {keep_on_failure: 3h}}\nrun: 'true'\n",
		"two.yaml":  "name: p\n---\nrun: 'true'\n---\nresources: {job_recovery: {keep_on_failure: 1d}}\nrun: 'true'\n",
		"at.yaml":   "resources: {job_recovery: {keep_on_failure: 2h}}\nrun: 'true'\n",
	})
	_, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "over.yaml"), Dir: root})
	want := `resources.job_recovery.keep_on_failure: "3h" is above controller.max_keep_on_failure (2h); keep it at most 2h, or raise the ceiling in config.yaml`
	if got := problems(t, err); len(got) != 1 || got[0] != want {
		t.Errorf("launch: %q, want %q", got, want)
	}
	if _, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "over.yaml"), Dir: root}); err == nil {
		t.Error("the dry run passed a keep_on_failure above the ceiling")
	}
	_, err = s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "two.yaml"), Dir: root})
	if got := problems(t, err); len(got) != 1 || !strings.HasPrefix(got[0], `tasks[1].resources.job_recovery.keep_on_failure: "24h" is above`) {
		t.Errorf("pipeline: %q", got)
	}
	j, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "at.yaml"), Dir: root})
	if err != nil {
		t.Fatalf("keep_on_failure at the ceiling: %v", err)
	}
	endJob(t, s, j.ID)
	_, err = s.Retry(ctx, contract.RetryRequest{IDs: []int64{j.ID}, Reason: "r", Sets: []string{"resources.job_recovery.keep_on_failure=5h"}})
	if got := problems(t, err); len(got) != 1 || !strings.Contains(got[0], `keep_on_failure: "5h" is above controller.max_keep_on_failure (2h)`) {
		t.Errorf("retry --set: %q", got)
	}
}

// keptJob launches a job whose task failed on a real local node and
// records its end, keeping the cluster until keepFor from now when
// keepFor > 0. It returns the job's id and its cluster's node directory.
func keptJob(t *testing.T, s *Service, keepFor time.Duration) (int64, string) {
	t.Helper()
	ctx := context.Background()
	root := project(t, map[string]string{"t.yaml": "run: 'exit 3'\n"})
	j, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root, RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	prov, err := s.Clouds.Provider(ctx, "local")
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Store.NewAttempt(ctx, j.ID, 0, func(n int) string { return provision.ClusterName(j.ID, 0, n) }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	place := schema.Placement{Cloud: "local", Region: "local", Zone: "local-a"}
	cl, err := prov.Launch(ctx, provision.ClusterSpec{Name: a.Cluster, Placement: place, NumNodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prov.Terminate(context.Background(), a.Cluster) })
	nr, err := prov.Runner(ctx, cl, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := node.ForAttempt(nr, a.Attempt)
	if err := node.Start(ctx, r, node.StartSpec{Run: "echo from-the-task >marker; exit 3", Env: map[string]string{"SEEN": "yes"}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; {
		st, err := node.Poll(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if st.Done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task did not end within 15s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Store.MarkLaunched(ctx, a.ID, "local", "local", "local-a", []string{cl.Nodes[0].InstanceID}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	d := strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "exit code 3; no restarts left (max_restarts_on_errors 0)"}
	var f store.Facts
	if keepFor > 0 {
		until := s.Now().Add(keepFor)
		f.KeptUntil = &until
	}
	if err := s.Store.EndAttempt(ctx, a, store.Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{ptr(3)}}, d, f); err != nil {
		t.Fatal(err)
	}
	return j.ID, r.Dir()
}

func ptr(n int) *int { return &n }

func TestShellReachesTheKeptNode(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	id, _ := keptJob(t, s, time.Hour)
	var out, errb bytes.Buffer
	code, err := s.Shell(ctx, contract.ShellRequest{ID: id, Argv: []string{"sh", "-c", "cat marker; echo $SEEN; exit 9"}, Stdio: provision.Stdio{Out: &out, Err: &errb}})
	if err != nil || code != 9 || out.String() != "from-the-task\nyes\n" {
		t.Errorf("jobs ssh: exit %d, %v, out %q, err %q; want 9 and the task's file and env", code, err, out.String(), errb.String())
	}
	_, err = s.Shell(ctx, contract.ShellRequest{ID: id, Node: 1, Argv: []string{"true"}})
	var ue *contract.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--node 1: job 1's cluster sortie-1-0-1 has 1 node; give --node from 0 to 0") {
		t.Errorf("--node 1: %v, want a usage error naming the range", err)
	}

	// Released: the shell and a second release say so.
	v, err := s.Release(ctx, id)
	if err != nil || v.Cluster != "sortie-1-0-1" {
		t.Fatalf("release: %+v, %v", v, err)
	}
	if _, err := s.Shell(ctx, contract.ShellRequest{ID: id, Argv: []string{"true"}}); !errors.Is(err, contract.ErrReleased) || !strings.Contains(err.Error(), "being torn down (released by user") {
		t.Errorf("shell after the release: %v", err)
	}
	a, _ := s.Store.KeptAttempt(ctx, id)
	if _, err := s.Store.MarkReleased(ctx, a.ID, strategy.ReleasedByUser); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, id); !errors.Is(err, contract.ErrReleased) || !strings.Contains(err.Error(), "already released at") {
		t.Errorf("second release: %v", err)
	}
}

func TestShellAndReleaseSayWhyNothingIsKept(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	notKept, _ := keptJob(t, s, 0)
	for _, err := range []error{
		func() error { _, err := s.Shell(ctx, contract.ShellRequest{ID: notKept}); return err }(),
		func() error { _, err := s.Release(ctx, notKept); return err }(),
	} {
		if !errors.Is(err, contract.ErrNotKept) || !strings.Contains(err.Error(), "ended FAILED and its cluster was not kept") ||
			!strings.Contains(err.Error(), "keep_on_failure") {
			t.Errorf("not kept: %v", err)
		}
	}
	root := project(t, map[string]string{"t.yaml": "run: 'true'\n"})
	running, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Shell(ctx, contract.ShellRequest{ID: running.ID}); !errors.Is(err, contract.ErrJobRunning) || !strings.Contains(err.Error(), "sortie jobs logs 2 -f") {
		t.Errorf("running: %v", err)
	}
	if _, err := s.Release(ctx, 99); !errors.Is(err, contract.ErrNoSuchJob) {
		t.Errorf("no such job: %v", err)
	}
	// Its time has come though the controller has not torn it down yet.
	kept, _ := keptJob(t, s, time.Minute)
	s.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if _, err := s.Shell(ctx, contract.ShellRequest{ID: kept}); !errors.Is(err, contract.ErrReleased) || !strings.Contains(err.Error(), "keep_on_failure ran out") {
		t.Errorf("past its time: %v", err)
	}
}

// A cancel names a job that ended but keeps its cluster: the cluster is
// released, and the job stays as it ended.
func TestCancelOfAKeptJobReleasesIt(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	id, _ := keptJob(t, s, time.Hour)
	marked, err := s.Cancel(ctx, contract.CancelRequest{IDs: []int64{id}})
	if err != nil || len(marked) != 1 || marked[0] != id {
		t.Fatalf("cancel: %v, %v", marked, err)
	}
	a, _ := s.Store.KeptAttempt(ctx, id)
	if a.ReleaseRequested != strategy.ReleasedByCancel {
		t.Errorf("release requested %q, want %q", a.ReleaseRequested, strategy.ReleasedByCancel)
	}
	if j, _ := s.Store.Job(ctx, id); j.Status != lifecycle.Failed {
		t.Errorf("job %s after the cancel, want FAILED still", j.Status)
	}
	// A second cancel finds nothing left to do.
	if marked, err := s.Cancel(ctx, contract.CancelRequest{IDs: []int64{id}}); err != nil || len(marked) != 0 {
		t.Errorf("second cancel: %v, %v", marked, err)
	}
}
