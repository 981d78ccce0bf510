package smoke_tests

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/controller/lifecycle"
)

// server is a running `sortie server` on 127.0.0.1 and its home.
type server struct {
	*env
	url string
	cmd *exec.Cmd
	log *os.File
}

// startServer runs `sortie server` on a free port of 127.0.0.1 and waits
// for its healthz; the test's end stops it.
func startServer(t *testing.T) *server {
	t.Helper()
	return startServerIn(t, newEnv(t))
}

// startServerIn is startServer on e's home, with args added to the
// server's own.
func startServerIn(t *testing.T, e *env, args ...string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e.bin, append([]string{"server", "--listen", addr}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = e.dir, e.environ(), logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{env: e, url: "http://" + addr, cmd: cmd, log: logf}
	e.serverURL = s.url
	for i, a := range args {
		if a == "--url" && i+1 < len(args) {
			e.serverURL = strings.TrimRight(args[i+1], "/")
		}
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("server log:\n%s", tail(string(b), 6000))
		}
		logf.Close()
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(s.url + "/v1/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("the server did not answer on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// user adds a user and returns a CLI world pointed at the server with
// the user's token, with a home and a config directory of its own.
func (s *server) user(name string, admin bool) (*env, string) {
	s.t.Helper()
	args := []string{"server", "users", "add", name}
	if admin {
		args = append(args, "--admin")
	}
	r := s.must(args...)
	tok := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(tok, "sortie_") || !strings.Contains(r.stderr, "shown once") {
		s.t.Fatalf("users add printed %q / %q", r.stdout, r.stderr)
	}
	// The link is to the address the home's server is reached at (its
	// --url, else where it listens; the last started of replicas on one
	// home), not a default.
	if want := s.serverURL + "/?token=" + tok; !strings.Contains(r.stderr, want) {
		s.t.Errorf("users add printed %q, want the link %s", r.stderr, want)
	}
	root := s.t.TempDir()
	u := newEnv(s.t, "SORTIE_API_URL="+s.url, "SORTIE_TOKEN="+tok, "HOME="+root, "XDG_CONFIG_HOME="+filepath.Join(root, ".config"))
	return u, tok
}

// Two users on one server: alice's job is hers; bob's cancel of it is
// refused naming her, and alice's goes through; alice retries her failed
// job with a reason; the inputs that failed in alice's job are refused to
// bob, naming her job; no token reaches the server's log.
func TestTwoUsersOnOneServer(t *testing.T) {
	s := startServer(t)
	alice, aliceTok := s.user("alice", false)
	bob, bobTok := s.user("bob", false)
	if r := s.must("server", "users", "list"); !strings.Contains(r.stdout, "alice") || !strings.Contains(r.stdout, "bob") {
		t.Fatalf("users list:\n%s", r.stdout)
	}

	long := alice.launch(alice.write("long.yaml", "resources: {cloud: local}\nrun: sleep 120\n"))
	d := alice.show(long)
	if d.Owner == nil || *d.Owner != "alice" {
		t.Fatalf("owner %v, want alice", d.Owner)
	}
	r := bob.run("jobs", "cancel", strconv.FormatInt(long, 10), "-y")
	if want := fmt.Sprintf("job %d belongs to alice", long); r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("bob's cancel: exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
	if got := bob.show(long); got.Status == lifecycle.Cancelling || got.Status == lifecycle.Cancelled {
		t.Fatalf("bob's refused cancel cancelled the job: %s", got.Status)
	}
	// bob's --all selects his own jobs: none, and it says whose run.
	if r := bob.run("jobs", "cancel", "--all", "-y"); r.code != 0 || !strings.Contains(r.stderr, "No unfinished job to cancel: none of yours (alice has 1).") {
		t.Fatalf("bob's cancel --all: exit %d, stderr %q", r.code, r.stderr)
	}
	alice.must("jobs", "cancel", strconv.FormatInt(long, 10), "-y")
	if got := alice.waitStatus(long, lifecycle.Cancelled); got.CancelledBy == nil || *got.CancelledBy != "alice" {
		t.Fatalf("cancelled_by %v", got.CancelledBy)
	}

	// The workdir travels as an upload: the task reads its file on the node.
	alice.write("code/msg.txt", "hello from alice's disk\n")
	task := "workdir: code\nresources: {cloud: local}\nrun: cat msg.txt; exit 3\n"
	failed := alice.launch(alice.write("fail.yaml", task))
	alice.waitStatus(failed, lifecycle.Failed)
	if logs := alice.must("jobs", "logs", strconv.FormatInt(failed, 10)); !strings.Contains(logs.stdout, "hello from alice's disk") {
		t.Fatalf("logs through the server: %q", logs.stdout)
	}

	r = bob.run("jobs", "retry", strconv.FormatInt(failed, 10), "--reason", "mine now", "-y")
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("job %d belongs to alice", failed)) {
		t.Fatalf("bob's retry: exit %d %q", r.code, r.stderr)
	}
	r = alice.must("jobs", "retry", strconv.FormatInt(failed, 10), "--reason", "flaky disk", "-o", "json")
	if !strings.Contains(r.stdout, `"retry_reason": "flaky disk`) || !strings.Contains(r.stdout, `"requested_by": "alice"`) {
		t.Fatalf("alice's retry:\n%s", r.stdout)
	}

	// bob, from his own copy of the same files, is refused alice's failure.
	bob.write("code/msg.txt", "hello from alice's disk\n")
	r = bob.run("jobs", "launch", "-d", bob.write("fail.yaml", task))
	if r.code != 3 || !strings.Contains(r.stderr, fmt.Sprintf("already failed in alice's job %d", failed)) ||
		!strings.Contains(r.stderr, fmt.Sprintf("sortie jobs logs %d", failed)) {
		t.Fatalf("bob's launch of alice's failure: exit %d, stderr %q", r.code, r.stderr)
	}
	// A launch that follows its job streams the log through the server
	// (chunked, line by line) and exits as the job ends.
	r = alice.run("jobs", "launch", alice.write("follow.yaml", "resources: {cloud: local}\nrun: echo one; sleep 1; echo two\n"))
	if r.code != 0 || !strings.Contains(r.stdout, "one\ntwo") || !strings.Contains(r.stderr, "== job ") || !strings.Contains(r.stderr, "ended SUCCEEDED") {
		t.Fatalf("a followed launch: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	r = alice.run("jobs", "launch", alice.write("follow-fail.yaml", "resources: {cloud: local}\nrun: echo bad; exit 4\n"))
	if r.code != 1 || !strings.Contains(r.stdout, "bad") {
		t.Fatalf("a followed failing launch: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	// bob's job of other inputs is his.
	mine := bob.launch(bob.write("ok.yaml", "resources: {cloud: local}\nrun: echo bob\n"))
	if got := bob.waitStatus(mine, lifecycle.Succeeded); got.Owner == nil || *got.Owner != "bob" {
		t.Fatalf("bob's job owner %v", got.Owner)
	}
	// The queue of both users' jobs says whose each is, what it asks for
	// and where it ran.
	q := strings.Split(bob.must("jobs", "queue", "-a").stdout, "\n")
	if h := strings.Fields(q[0]); len(h) < 5 || h[2] != "OWNER" || !strings.Contains(q[0], "RESOURCES") || !strings.Contains(q[0], "LOCATION") {
		t.Fatalf("the queue's header: %q", q[0])
	}
	for _, line := range q[1:] {
		if f := strings.Fields(line); len(f) > 4 && f[0] == strconv.FormatInt(mine, 10) && (f[2] != "bob" || !strings.Contains(line, "1x[default]") || !strings.Contains(line, "local/local-")) {
			t.Errorf("bob's job in the queue: %q", line)
		}
	}

	b, err := os.ReadFile(s.log.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{aliceTok, bobTok} {
		if strings.Contains(string(b), tok) {
			t.Fatal("a token is in the server's log")
		}
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	requests := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"msg":"request"`) {
			requests++
		}
	}
	if requests == 0 {
		t.Fatalf("the server logged no request:\n%s", tail(string(b), 3000))
	}
}

// A user logs in once; the login is kept for them alone and used by every
// later command; a wrong token is refused and not kept.
func TestLogin(t *testing.T) {
	s := startServer(t)
	_, tok := s.user("carol", false)
	root := t.TempDir()
	u := newEnv(t, "HOME="+root, "XDG_CONFIG_HOME="+filepath.Join(root, "cfg"), "SORTIE_API_URL=", "SORTIE_TOKEN=")
	if r := u.run("login", s.url, "--token", "sortie_wrong"); r.code == 0 {
		t.Fatalf("a wrong token logged in: %q", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(root, "cfg", "sortie", "login.json")); err == nil {
		t.Fatal("a refused login was kept")
	}
	cmd := exec.Command(u.bin, "login", s.url)
	cmd.Env, cmd.Stdin = u.environ(), strings.NewReader(tok+"\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "as carol") {
		t.Fatalf("login: %v %s", err, out)
	}
	info, err := os.Stat(filepath.Join(root, "cfg", "sortie", "login.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("login file: %v %v", info, err)
	}
	id := u.launch(u.write("t.yaml", "resources: {cloud: sim}\nrun: 'true'\n"))
	if d := u.show(id); d.Owner == nil || *d.Owner != "carol" {
		t.Fatalf("owner %v", d.Owner)
	}
	// The job is on the server's home, not on this user's.
	if _, err := os.Stat(filepath.Join(u.home, "state.db")); err == nil {
		t.Fatal("the CLI opened a home of its own")
	}
}
