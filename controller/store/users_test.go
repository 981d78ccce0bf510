package store

import (
	"context"
	"errors"
	"testing"
)

// Users are stored with their token's hash; a name is taken once; a
// revoked user is still found by its hash, with the time it was revoked.
func TestUsers(t *testing.T) { onEach(t, testUsers) }

func testUsers(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	if err := s.AddUser(ctx, "alice", "hash-a", true); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUser(ctx, "bob", "hash-b", false); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUser(ctx, "alice", "hash-c", false); !errors.Is(err, ErrUserExists) {
		t.Fatalf("second alice: %v", err)
	}
	u, err := s.UserByTokenHash(ctx, "hash-b")
	if err != nil || u.Name != "bob" || u.Admin || u.RevokedAt != nil {
		t.Fatalf("bob by hash: %+v %v", u, err)
	}
	if _, err := s.UserByTokenHash(ctx, "hash-x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown hash: %v", err)
	}
	if err := s.RevokeUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeUser(ctx, "carol"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	u, _ = s.UserByTokenHash(ctx, "hash-b")
	if u.RevokedAt == nil {
		t.Fatal("bob not revoked")
	}
	first := *u.RevokedAt
	_ = s.RevokeUser(ctx, "bob")
	u, _ = s.UserByTokenHash(ctx, "hash-b")
	if !u.RevokedAt.Equal(first) {
		t.Fatalf("a second revoke moved the time: %v then %v", first, u.RevokedAt)
	}
	us, err := s.Users(ctx)
	if err != nil || len(us) != 2 || us[0].Name != "alice" || !us[0].Admin || us[1].Name != "bob" {
		t.Fatalf("users: %+v %v", us, err)
	}
}

// A job keeps its owner; the owner filter selects it; a cancel, a retry
// and a forget each record who asked.
func TestOwnersAndActions(t *testing.T) { onEach(t, testOwnersAndActions) }

func testOwnersAndActions(t *testing.T, be backend) {
	ctx := context.Background()
	s, _ := openTest(t, be)
	a, _ := s.CreateJob(ctx, &Job{Name: "a", Spec: []byte(`{}`), Owner: "alice", InputKey: "k1"}, []NewTask{{}})
	b, _ := s.CreateJob(ctx, &Job{Name: "b", Spec: []byte(`{}`), Owner: "bob"}, []NewTask{{}})
	got, err := s.Jobs(ctx, JobFilter{Owner: "alice"})
	if err != nil || len(got) != 1 || got[0].ID != a || got[0].Owner != "alice" {
		t.Fatalf("alice's jobs: %+v %v", got, err)
	}
	if m, err := s.RequestCancelBy(ctx, []int64{b}, "root"); err != nil || len(m) != 1 {
		t.Fatalf("cancel: %v %v", m, err)
	}
	jb, _ := s.Job(ctx, b)
	if jb.CancelledBy != "root" {
		t.Fatalf("cancelled_by %q", jb.CancelledBy)
	}
	endFailed(t, s, a, "boom")
	r, err := s.CreateJob(ctx, &Job{Name: "a", Spec: []byte(`{}`), Owner: "alice", RetryOf: &a, Trigger: "manual", RequestedBy: "alice", RetryReason: "flaky"}, []NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	fs, _ := s.KnownFailures(ctx)
	if len(fs) != 1 || fs[0].Owner != "alice" {
		t.Fatalf("failures: %+v", fs)
	}
	refused := errors.New("not yours")
	if _, _, err := s.ForgetFailureBy(ctx, "k1", "bob", func(f *KnownFailure) error {
		if f.Owner != "bob" {
			return refused
		}
		return nil
	}); !errors.Is(err, refused) {
		t.Fatalf("refused forget: %v", err)
	}
	if key, job, err := s.ForgetFailureBy(ctx, "k1", "alice", nil); err != nil || key != "k1" || job != a {
		t.Fatalf("forget: %q %d %v", key, job, err)
	}
	acts, err := s.Actions(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Action{{Actor: "root", Verb: "cancel", JobID: b}, {Actor: "alice", Verb: "retry", JobID: a}, {Actor: "alice", Verb: "forget", JobID: a, Detail: "k1"}}
	if len(acts) != len(want) {
		t.Fatalf("actions: %+v", acts)
	}
	for i, w := range want {
		g := acts[i]
		if g.Actor != w.Actor || g.Verb != w.Verb || g.JobID != w.JobID || (w.Detail != "" && g.Detail != w.Detail) {
			t.Fatalf("action %d: %+v, want %+v", i, g, w)
		}
	}
	if acts[1].Detail == "" || acts[1].At.IsZero() {
		t.Fatalf("retry action without its new job: %+v (retry %d)", acts[1], r)
	}
	// Forgetting every failure of one owner leaves the others'.
	c, _ := s.CreateJob(ctx, &Job{Name: "c", Spec: []byte(`{}`), Owner: "carol", InputKey: "k3"}, []NewTask{{}})
	d, _ := s.CreateJob(ctx, &Job{Name: "d", Spec: []byte(`{}`), Owner: "dave", InputKey: "k4"}, []NewTask{{}})
	endFailed(t, s, c, "x")
	endFailed(t, s, d, "x")
	if n, err := s.ForgetAllFailuresBy(ctx, "carol", "carol"); err != nil || n != 1 {
		t.Fatalf("forget carol's: %d %v", n, err)
	}
	if fs, _ := s.KnownFailures(ctx); len(fs) != 1 || fs[0].JobID != d {
		t.Fatalf("left: %+v", fs)
	}
}

func TestValidUserName(t *testing.T) {
	for _, ok := range []string{"alice", "bob.smith", "ci-bot_2", "7up"} {
		if err := ValidUserName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "a b", "a/b", "ä", string(make([]byte, 65))} {
		if err := ValidUserName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
