package client

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/controller/api"
	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/service"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// serve runs an API server on a fresh home with users alice and bob and
// returns a client for each.
func serve(t *testing.T, env map[string]string) (alice, bob *Client, svc *service.Service) {
	t.Helper()
	ctx := context.Background()
	h := t.TempDir()
	svc, err := service.Open(ctx, h, clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	up := &api.Uploads{Dir: filepath.Join(h, "uploads")}
	api.ForServer(svc, up, nil)
	ts := httptest.NewServer(api.NewServer(api.Options{Service: svc, Store: svc.Store, Uploads: up}))
	t.Cleanup(ts.Close)
	var cs []*Client
	for _, name := range []string{"alice", "bob"} {
		tok, hash, err := api.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Store.AddUser(ctx, name, hash, false); err != nil {
			t.Fatal(err)
		}
		// Only alice's environment holds env; bob's is empty.
		e := env
		if name == "bob" {
			e = nil
		}
		c := New(ts.URL, tok, func(k string) string { return e[k] })
		c.Sources = service.LocalSources
		cs = append(cs, c)
	}
	return cs[0], cs[1], svc
}

// Through the client a launch uploads its workdir once, secrets without
// a value come from the user's environment, and the service's errors come
// back as themselves: a task's problems, a refusal naming the owner, a
// known failure (exit status 3 in the CLI), no such job.
func TestClientAgainstAServer(t *testing.T) {
	ctx := context.Background()
	alice, bob, svc := serve(t, map[string]string{"TOKEN": "alice's secret"})
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "code"), 0o755)
	os.WriteFile(filepath.Join(dir, "code", "a.txt"), []byte("a"), 0o644)
	task := filepath.Join(dir, "t.yaml")
	os.WriteFile(task, []byte("workdir: code\nsecrets: {TOKEN: null}\nrun: 'true'\nresources: {cloud: sim}\n"), 0o644)
	j, err := alice.Launch(ctx, contract.LaunchRequest{File: task, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if *j.Owner != "alice" {
		t.Fatalf("owner %v", *j.Owner)
	}
	if got, _ := os.ReadFile(filepath.Join(svc.Home, "secrets", itoa(j.ID)+".json")); !bytes.Contains(got, []byte("alice's secret")) {
		t.Fatalf("kept secrets %q", got)
	}
	blobs, _ := os.ReadDir(filepath.Join(svc.Home, "uploads", "blobs"))
	if len(blobs) != 1 {
		t.Fatalf("%d blobs, want the workdir's one", len(blobs))
	}

	// bob has no TOKEN in his environment: the server's problem stands.
	_, err = bob.Launch(ctx, contract.LaunchRequest{File: task, Dir: dir})
	var ve *schema.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "secrets.TOKEN: has no value") {
		t.Fatalf("bob without the secret: %v", err)
	}
	_, err = bob.Cancel(ctx, contract.CancelRequest{IDs: []int64{j.ID}})
	var fe *contract.ForbiddenError
	if !errors.As(err, &fe) || fe.Owner != "alice" || err.Error() != (&contract.ForbiddenError{Job: j.ID, Owner: "alice", Verb: "cancel"}).Error() {
		t.Fatalf("bob's cancel: %v", err)
	}
	if _, err := bob.Show(ctx, 999); !errors.Is(err, contract.ErrNoSuchJob) {
		t.Fatalf("no such job: %v", err)
	}
	// The queue streams back the same views.
	q, err := bob.Queue(ctx, contract.QueueRequest{All: true})
	if err != nil || len(q) != 1 || q[0].ID != j.ID {
		t.Fatalf("queue: %+v %v", q, err)
	}
	// A page's limit and cursor reach the server.
	j2, err := alice.Launch(ctx, contract.LaunchRequest{File: task, Dir: dir, RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	if q, err := bob.Queue(ctx, contract.QueueRequest{All: true, Limit: 1}); err != nil || len(q) != 1 || q[0].ID != j2.ID {
		t.Fatalf("the first page of 1: %+v %v", q, err)
	}
	if q, err := bob.Queue(ctx, contract.QueueRequest{All: true, Limit: 1, Before: j2.ID}); err != nil || len(q) != 1 || q[0].ID != j.ID {
		t.Fatalf("the page before job %d: %+v %v", j2.ID, q, err)
	}
}

// An error body becomes the service's error, with the server's message.
func TestErrorMapping(t *testing.T) {
	kf := Error(409, contract.ErrorDetail{Code: contract.CodeKnownFailure, Message: "These inputs already failed in alice's job 3", Job: 3, Owner: "alice"})
	var k *contract.KnownFailureError
	if !errors.As(kf, &k) || k.Failure.JobID != 3 || kf.Error() != "These inputs already failed in alice's job 3" {
		t.Errorf("known failure: %v", kf)
	}
	ve := Error(422, contract.ErrorDetail{Code: contract.CodeInvalidTask, Message: "run: is required",
		Problems: []schema.Problem{{Path: "run", Message: "is required"}}})
	if _, ok := ve.(*schema.ValidationError); !ok {
		t.Errorf("a task's problems: %T %v", ve, ve)
	}
	if err := Error(409, contract.ErrorDetail{Code: contract.CodeConflict, Verb: "logs_removed", Message: "gone"}); !errors.Is(err, contract.ErrLogsRemoved) {
		t.Errorf("conflict: %v", err)
	}
	var ue *contract.UsageError
	if err := Error(413, contract.ErrorDetail{Code: contract.CodeTooLarge, Message: "over", Limit: 10}); !errors.As(err, &ue) {
		t.Errorf("too large: %v", err)
	}
}

// The same files make the same archive, whatever their times; what the
// ignore file leaves out is not in it.
func TestPackIsStable(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, ".sortieignore"), []byte("big/\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "big"), 0o755)
	os.WriteFile(filepath.Join(dir, "big", "x"), bytes.Repeat([]byte("x"), 1<<16), 0o644)
	info, _ := os.Stat(dir)
	ar1, up1, err := Pack(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(dir, "a.txt"), info.ModTime().Add(-3600e9), info.ModTime().Add(-3600e9))
	ar2, up2, _ := Pack(dir, info)
	if up1 != up2 || !bytes.Equal(ar1, ar2) {
		t.Error("a touched file changed the archive")
	}
	if len(ar1) > 1<<15 {
		t.Errorf("the archive is %d bytes: the ignored directory went in", len(ar1))
	}
	f := filepath.Join(dir, "a.txt")
	finfo, _ := os.Stat(f)
	_, up, _ := Pack(f, finfo)
	if up.File != "a.txt" {
		t.Errorf("a file's upload names %q", up.File)
	}
}

func TestLoginPath(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	getenv := func(k string) string { return env[k] }
	if p, _ := LoginPath(getenv); p != "/home/u/.config/sortie/login.json" {
		t.Errorf("default: %s", p)
	}
	env["XDG_CONFIG_HOME"] = "/cfg"
	if p, _ := LoginPath(getenv); p != "/cfg/sortie/login.json" {
		t.Errorf("XDG: %s", p)
	}
	env["XDG_CONFIG_HOME"] = t.TempDir()
	if c, err := FromEnv(getenv); c != nil || err != nil {
		t.Errorf("no login: %v %v", c, err)
	}
	if _, err := SaveLogin(getenv, Login{URL: "https://s", Token: "sortie_x"}); err != nil {
		t.Fatal(err)
	}
	c, err := FromEnv(getenv)
	if err != nil || c.URL != "https://s" || c.Token != "sortie_x" {
		t.Errorf("kept login: %+v %v", c, err)
	}
	env["SORTIE_API_URL"] = "http://other"
	if _, err := FromEnv(getenv); err == nil || !strings.Contains(err.Error(), "SORTIE_TOKEN") {
		t.Errorf("URL without token: %v", err)
	}
	env["SORTIE_TOKEN"] = "t"
	if c, _ := FromEnv(getenv); c.URL != "http://other" {
		t.Errorf("the environment does not win: %+v", c)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A follow through a server gets the job's steps as the local one does.
func TestFollowGetsTheSteps(t *testing.T) {
	ctx := context.Background()
	alice, _, svc := serve(t, nil)
	st := svc.Store
	id, err := st.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte(`{}`), Owner: "alice"}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.NewAttempt(ctx, id, 0, func(int) string { return "c" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MarkLaunched(ctx, a.ID, "local", "local", "local-a", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.LaunchFailed, Reason: "node 0 lacks git"},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.FailedPrechecks, Reason: "no retry can fix it"}, store.Facts{}); err != nil {
		t.Fatal(err)
	}
	var steps []string
	var out bytes.Buffer
	if err := alice.Logs(ctx, contract.LogsRequest{ID: id, Follow: true, FromStart: true, Step: func(s string) { steps = append(steps, s) }}, &out); err != nil {
		t.Fatal(err)
	}
	want := "Attempt 1: placement chosen: local/local/local-a, on-demand.|Attempt 1: requesting 1 instance there for cluster c.|" +
		"Attempt 1: cluster c is up (n0); starting the task.|" +
		"Attempt 1 ended: launch_failed (node 0 lacks git); no retry can fix it."
	if got := strings.Join(steps, "|"); got != want {
		t.Errorf("steps through the server:\n got %s\nwant %s", got, want)
	}
}
