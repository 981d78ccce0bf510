package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// as is s asked by name: a copy sharing s's store, as a server makes one
// per request.
func as(s *Service, name string, admin bool) *Service {
	c := *s
	c.Asker = &contract.Asker{Name: name, Admin: admin}
	return &c
}

// A job belongs to who launched it; only its owner or an admin may cancel,
// retry or forget it; a filter of a user who is no admin selects only their
// jobs; every cancel and retry records who asked.
func TestOwnerOrAdmin(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"task.yaml": "run: 'false'\n"})
	alice, bob, admin := as(s, "alice", false), as(s, "bob", false), as(s, "root", true)
	j, err := alice.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "task.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	if j.Owner == nil || *j.Owner != "alice" {
		t.Fatalf("owner %v, want alice", j.Owner)
	}
	var fe *contract.ForbiddenError
	_, err = bob.Cancel(ctx, contract.CancelRequest{IDs: []int64{j.ID}})
	if !errors.As(err, &fe) || fe.Owner != "alice" || fe.Job != j.ID || !strings.Contains(err.Error(), "belongs to alice") {
		t.Fatalf("bob's cancel: %v", err)
	}
	// bob's --all selects none of alice's jobs.
	if ts, err := bob.CancelTargets(ctx, contract.CancelRequest{All: true}); err != nil || len(ts) != 0 {
		t.Fatalf("bob's --all: %v %v", ts, err)
	}
	if ts, err := admin.CancelTargets(ctx, contract.CancelRequest{All: true}); err != nil || len(ts) != 1 {
		t.Fatalf("admin's --all: %v %v", ts, err)
	}
	endJob(t, s, j.ID)
	if _, err := bob.Retry(ctx, contract.RetryRequest{IDs: []int64{j.ID}, Reason: "mine now"}); !errors.As(err, &fe) {
		t.Fatalf("bob's retry: %v", err)
	}
	rs, err := admin.Retry(ctx, contract.RetryRequest{IDs: []int64{j.ID}, Reason: "flaky", RequestedBy: ""})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0].Retry
	if *r.Owner != "alice" || *r.RequestedBy != "root" {
		t.Fatalf("the admin's retry: owner %v requested by %v, want alice's job asked by root", *r.Owner, *r.RequestedBy)
	}
	if _, err := alice.Cancel(ctx, contract.CancelRequest{IDs: []int64{r.ID}}); err != nil {
		t.Fatalf("alice's cancel of the retry of her job: %v", err)
	}
	got, _ := s.Store.Job(ctx, r.ID)
	if got.CancelledBy != "alice" {
		t.Fatalf("cancelled_by %q", got.CancelledBy)
	}
}

// A known failure of alice's job refuses bob's launch of the same inputs,
// naming her job; bob may not forget it, alice may.
func TestKnownFailureSharedAcrossUsers(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	id, err := s.Store.CreateJob(ctx, &store.Job{Name: "a", Spec: []byte(`{}`), Owner: "alice", InputKey: "kkkk1"}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	failJob(t, s, id)
	f, _ := s.Store.KnownFailure(ctx, "kkkk1")
	err = knownFailure(f, f.RecordedAt, "bob")
	if !strings.Contains(err.Error(), "already failed in alice's job") {
		t.Fatalf("bob is told: %v", err)
	}
	err = knownFailure(f, f.RecordedAt, "alice")
	if strings.Contains(err.Error(), "alice's") {
		t.Fatalf("alice is told of her own job as another's: %v", err)
	}
	var fe *contract.ForbiddenError
	if _, err := as(s, "bob", false).ForgetFailure(ctx, "kkkk"); !errors.As(err, &fe) {
		t.Fatalf("bob's forget: %v", err)
	}
	if key, err := as(s, "alice", false).ForgetFailure(ctx, "kkkk"); err != nil || key != "kkkk1" {
		t.Fatalf("alice's forget: %q %v", key, err)
	}
}

// failJob ends a job FAILED with a known failure, as the controller does.
func failJob(t *testing.T, s *Service, id int64) {
	t.Helper()
	ctx := context.Background()
	a, err := s.Store.NewAttempt(ctx, id, 0, func(int) string { return "c" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkLaunched(ctx, a.ID, "local", "local", "local-a", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	one := 1
	if err := s.Store.EndAttempt(ctx, a, store.Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{&one}, Reason: "node 0 exited 1"},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "exit code 1"}, store.Facts{}); err != nil {
		t.Fatal(err)
	}
}

// On a server, every local source is an upload: a task whose workdir was
// not uploaded is refused naming it, and one that was runs from the
// unpacked upload, never from the path the user's machine has.
func TestServerLaunchReadsUploadsOnly(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	unpacked := t.TempDir()
	if err := os.WriteFile(filepath.Join(unpacked, "train.py"), []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	digest := strings.Repeat("ab", 32)
	s.Inputs = func(d string) (string, error) {
		if d != digest {
			return "", errors.New("no such upload")
		}
		return unpacked, nil
	}
	task := []byte("workdir: /home/alice/code\nsecrets: {TOKEN: null}\nrun: python train.py\n")
	t.Setenv("TOKEN", "the-server's-own")
	_, err := s.Launch(ctx, contract.LaunchRequest{File: "task.yaml", Task: task})
	got := problems(t, err)
	want := []string{
		`workdir: "/home/alice/code" was not uploaded with the request`,
		"secrets.TOKEN: has no value",
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(got, "\n"), w) {
			t.Errorf("problems %q lack %q", got, w)
		}
	}
	j, err := s.Launch(ctx, contract.LaunchRequest{File: "task.yaml", Task: task, SecretEnv: map[string]string{"TOKEN": "alice's"},
		Inputs: map[string]contract.Upload{"/home/alice/code": {SHA256: digest}}})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := s.Store.Job(ctx, j.ID)
	p, err := schema.Unmarshal(stored.Spec, clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if p.Tasks[0].Workdir != unpacked {
		t.Errorf("workdir %q, want the upload %q", p.Tasks[0].Workdir, unpacked)
	}
	if j.Name != "task" {
		t.Errorf("name %q, want the file's", j.Name)
	}
}
