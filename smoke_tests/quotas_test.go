package smoke_tests

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// Quotas set through the server: alice, no admin, is refused with a
// clear message; root sets alice's limit through SORTIE_API_URL, and her
// second job waits for it, saying so, while one asking for more than it
// allows is refused at launch; bad values exit 2 naming the flag; on the
// server's machine the list says who set it; unset, the job starts.
func TestQuotasThroughTheServer(t *testing.T) {
	e := newEnv(t)
	e.config("limits:\n  server: {running_jobs: 20}\n")
	s := startServerIn(t, e)
	alice, _ := s.user("alice", false)
	root, _ := s.user("root", true)

	r := alice.run("server", "quotas", "set", "--user", "alice", "--running-jobs", "50")
	if r.code != 1 || !strings.Contains(r.stderr, "only an admin may set a quota") {
		t.Fatalf("alice sets her own quota: exit %d, stderr %q; want 1 and only an admin may", r.code, r.stderr)
	}
	r = root.run("server", "quotas", "set", "--server", "--gpu", "A100=-1")
	if r.code != 2 || !strings.Contains(r.stderr, "--gpu A100=-1: give how many A100 GPUs running jobs may hold at once, 0 or more") {
		t.Fatalf("a negative count: exit %d, stderr %q; want 2 naming --gpu A100=-1", r.code, r.stderr)
	}
	r = root.run("server", "quotas", "set", "--server", "--per-user", "--nodes", "3")
	if r.code != 2 || !strings.Contains(r.stderr, "--server and --per-user: give only one of") {
		t.Fatalf("two scopes: exit %d, stderr %q", r.code, r.stderr)
	}
	r = root.must("server", "quotas", "set", "--user", "alice", "--running-jobs", "1", "--nodes", "2")
	if !strings.Contains(r.stdout, "Set the quota of user alice: at most 1 running jobs, 2 nodes.") {
		t.Fatalf("root sets alice's: %q", r.stdout)
	}

	// Any user lists the limits in effect, with where each comes from.
	var qs []contract.QuotaView
	if err := json.Unmarshal([]byte(alice.must("server", "quotas", "-o", "json").stdout), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Scope != "server" || qs[0].Source != "config" || qs[1].Name != "alice" || qs[1].SetBy != "root" || *qs[1].Limit.RunningJobs != 1 {
		t.Fatalf("quotas: %+v", qs)
	}
	// On the server's machine, over its store.
	if out := s.must("server", "quotas").stdout; !strings.Contains(out, "user    alice  1") || !strings.Contains(out, "set by root") || !strings.Contains(out, "config.yaml") {
		t.Errorf("server quotas on the server's machine:\n%s", out)
	}

	task := alice.write("task.yaml", "resources: {cloud: local}\nrun: sleep 120\n")
	first := alice.launch(task)
	alice.waitStatus(first, lifecycle.Running)
	second := alice.launch(task)
	want := "waiting: alice holds 1 of 1 running jobs (user limit)"
	alice.waitFor(second, 30*time.Second, "the second job waiting for alice's quota", func(d contract.JobDetail) bool {
		return d.Status == lifecycle.Pending && d.WaitReason != nil && strings.HasPrefix(*d.WaitReason, want)
	})
	r = alice.run("jobs", "launch", "-d", alice.write("wide.yaml", "num_nodes: 3\nresources: {cloud: local}\nrun: sleep 1\n"))
	if r.code != 2 || !strings.Contains(r.stderr, "the job asks for 3 nodes, more than the user limit of alice of 2") {
		t.Fatalf("a job over alice's quota: exit %d, stderr %q; want 2 naming the limit", r.code, r.stderr)
	}

	// server usage through the API: root sees every user, alice her own
	// row and the server's line; on the server's machine, every user.
	if out := root.must("server", "usage").stdout; !strings.Contains(out, "Server: 1/20 running jobs") || !strings.Contains(out, "alice  1/1") {
		t.Errorf("root's server usage:\n%s", out)
	}
	var rows []contract.UsageView
	if err := json.Unmarshal([]byte(alice.must("server", "usage", "-o", "json").stdout), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].User != "alice" || rows[0].Waiting != 1 || *rows[0].ServerHeld.RunningJobs != 1 {
		t.Errorf("alice's server usage: %+v, want her own row, 1 waiting, the server holding 1 job", rows)
	}
	if out := s.must("server", "usage").stdout; !strings.Contains(out, "alice  1/1") {
		t.Errorf("server usage on the server's machine:\n%s", out)
	}

	// Lowered by the server's admin on its machine, with no token.
	s.must("server", "quotas", "set", "--user", "alice", "--running-jobs", "0")
	if d := alice.show(first); d.Status != lifecycle.Running {
		t.Errorf("the running job is %s after the limit went to 0; want it left running", d.Status)
	}
	r = root.must("server", "quotas", "unset", "--user", "alice")
	if !strings.Contains(r.stdout, "Removed the quota of user alice: config.yaml has no limit for it") {
		t.Errorf("unset: %q", r.stdout)
	}
	alice.waitStatus(second, lifecycle.Running)
	alice.must("jobs", "cancel", strconv.FormatInt(first, 10), strconv.FormatInt(second, 10), "-y")
	alice.waitStatus(first, lifecycle.Cancelled)
	alice.waitStatus(second, lifecycle.Cancelled)
}

// A dollar limit: local nodes cost $10 an hour (config.yaml), the server
// may spend $15 an hour. The first job runs and holds its recorded $10;
// the second, expected to cost $10, waits saying dollars, and starts
// once the first ends; a job of 2 nodes ($20) could never fit and is
// refused at launch.
func TestHourlyCostLimit(t *testing.T) {
	e := newEnv(t)
	e.config("local:\n  prices:\n    node_hour: 10\nlimits:\n  server: {hourly_cost: 15}\n")
	task := e.write("task.yaml", "resources: {cloud: local}\nrun: sleep 120\n")
	// A launch is priced from the prices the controller has read (as the
	// dry run shows them): a first short job starts the controller, and
	// the jobs of the test are launched once the prices are read, so each
	// asks its $10 from launch.
	e.waitStatus(e.launch(e.write("warm.yaml", "resources: {cloud: local}\nrun: 'true'\n")), lifecycle.Succeeded)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(e.must("jobs", "launch", "--dry-run", "-o", "json", task).stdout, `"hourly_cost": 10`); {
		if time.Now().After(deadline) {
			t.Fatal("the dry run shows no hourly cost of $10 within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	first := e.launch(task)
	e.waitStatus(first, lifecycle.Running)
	second := e.launch(task)
	want := "waiting: $10.00 of the server's $15.00 an hour are in use"
	e.waitFor(second, 30*time.Second, "the second job waiting for the dollar limit", func(d contract.JobDetail) bool {
		return d.Status == lifecycle.Pending && d.WaitReason != nil && strings.HasPrefix(*d.WaitReason, want)
	})
	r := e.run("jobs", "launch", "-d", e.write("two.yaml", "num_nodes: 2\nresources: {cloud: local}\nrun: sleep 1\n"))
	if r.code != 2 || !strings.Contains(r.stderr, "the job asks for $20.00 an hour, more than the server limit of $15.00") {
		t.Fatalf("a $20/h job under a $15/h limit: exit %d, stderr %q; want 2 naming the limit in dollars", r.code, r.stderr)
	}
	if out := e.must("server", "usage").stdout; !strings.Contains(out, "$10.00/$15.00 an hour") {
		t.Errorf("server usage:\n%s\nwant the server's $10.00/$15.00 an hour", out)
	}
	e.must("jobs", "cancel", strconv.FormatInt(first, 10), "-y")
	e.waitStatus(first, lifecycle.Cancelled)
	e.waitStatus(second, lifecycle.Running)
	e.must("jobs", "cancel", strconv.FormatInt(second, 10), "-y")
	e.waitStatus(second, lifecycle.Cancelled)
}
