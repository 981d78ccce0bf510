package smoke_tests

import (
	"encoding/json"
	"sortie/controller/contract"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRetryWithOverrideSucceeds(t *testing.T) {
	e := newEnv(t, "SORTIE_USER=alice")
	f := e.write("task.yaml", "name: fixme\nrun: '[ \"$FIX\" = 1 ] || exit 4'\n")
	orig := e.launch(f)
	before := e.waitStatus(orig, "FAILED")
	r := e.must("jobs", "retry", strconv.FormatInt(orig, 10), "--reason", "flaky", "--set", "envs.FIX=1", "-o", "json")
	var res []contract.RetryResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 {
		t.Fatalf("retry -o json: %v %s", err, r.stdout)
	}
	id := res[0].Retry.ID
	d := e.waitStatus(id, "SUCCEEDED")
	if d.RetryOf == nil || *d.RetryOf != orig || d.RootID != orig || d.Trigger != "manual" {
		t.Errorf("retry links: retry_of %v root_id %d trigger %s", d.RetryOf, d.RootID, d.Trigger)
	}
	if deref(d.RetryReason) != "flaky" || deref(d.RequestedBy) != "alice" {
		t.Errorf("reason %v requested_by %v", d.RetryReason, d.RequestedBy)
	}
	if diff := cmp.Diff([]contract.Override{{Path: "envs.FIX", Old: "", New: "1"}}, d.Overrides); diff != "" {
		t.Errorf("overrides (-want +got):\n%s", diff)
	}
	after := e.show(orig)
	if after.RetriedIn == nil || *after.RetriedIn != id || after.Status != "FAILED" {
		t.Errorf("original after retry: status %s retried_in %v", after.Status, after.RetriedIn)
	}
	if diff := cmp.Diff(codes(before), codes(after)); diff != "" {
		t.Errorf("original's attempts changed (-before +after):\n%s", diff)
	}
	if len(after.Chain) != 2 || after.Chain[1].ID != id {
		t.Errorf("chain: %+v", after.Chain)
	}
	table := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(table, "retry of "+strconv.FormatInt(orig, 10)) || !strings.Contains(table, "envs.FIX") {
		t.Errorf("show does not show the chain:\n%s", table)
	}
	// The queue shows the link.
	q := e.must("jobs", "queue", "-a").stdout
	if !strings.Contains(q, "RETRY OF") {
		t.Errorf("queue lacks RETRY OF:\n%s", q)
	}
}

func TestRetryOfRunningJobRefused(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", "run: sleep 300\n")
	id := e.launch(f)
	e.waitStatus(id, "RUNNING")
	r := e.run("jobs", "retry", strconv.FormatInt(id, 10), "--reason", "why not")
	if r.code == 0 || !strings.Contains(r.stderr, "only ended jobs can be retried") {
		t.Fatalf("retry of a running job: exit %d, %s", r.code, r.stderr)
	}
	if q := e.queue("-a"); len(q) != 1 {
		t.Errorf("a job was created: %+v", q)
	}
	e.must("jobs", "cancel", strconv.FormatInt(id, 10))
	e.waitStatus(id, "CANCELLED")
}

func TestRetryByFilter(t *testing.T) {
	e := newEnv(t)
	fail := e.write("fail.yaml", "run: exit 1\n")
	ok := e.write("ok.yaml", "run: 'true'\n")
	var labs []int64
	for i := 0; i < 3; i++ {
		labs = append(labs, e.launch(fail, "-n", "lab-"+strconv.Itoa(i), "--env", "I="+strconv.Itoa(i)))
	}
	other := e.launch(fail, "-n", "prod-1", "--env", "I=9")
	good := e.launch(ok, "-n", "lab-ok")
	for _, id := range labs {
		e.waitStatus(id, "FAILED")
	}
	e.waitStatus(other, "FAILED")
	e.waitStatus(good, "SUCCEEDED")

	dry := e.must("jobs", "retry", "--status", "FAILED", "--name", "lab-*", "--reason", "lab outage", "--dry-run", "-o", "json")
	var targets []contract.JobView
	if err := json.Unmarshal([]byte(dry.stdout), &targets); err != nil || len(targets) != 3 {
		t.Fatalf("dry run: %v %s", err, dry.stdout)
	}
	if n := len(e.queue("-a")); n != 5 {
		t.Fatalf("dry run created jobs: %d", n)
	}
	// More than one job asks first; no answer means no.
	if r := e.run("jobs", "retry", "--status", "FAILED", "--name", "lab-*", "--reason", "lab outage"); r.code == 0 {
		t.Fatalf("retried without confirmation: %+v", r)
	}
	r := e.must("jobs", "retry", "--status", "FAILED", "--name", "lab-*", "--reason", "lab outage", "-y", "-o", "json")
	var res []contract.RetryResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for _, x := range res {
		got[x.Original.ID] = x.Retry.ID
	}
	if len(got) != 3 {
		t.Fatalf("retries: %+v", res)
	}
	for _, id := range labs {
		nid, ok := got[id]
		if !ok {
			t.Fatalf("job %d not retried", id)
		}
		if d := e.show(nid); d.RetryOf == nil || *d.RetryOf != id {
			t.Errorf("job %d retry_of %v, want %d", nid, d.RetryOf, id)
		}
	}
	if n := len(e.queue("-a")); n != 8 {
		t.Errorf("%d jobs, want 8", n)
	}
}

func TestRetryOfRetryKeepsRoot(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", "run: exit 2\n")
	first := e.launch(f)
	e.waitStatus(first, "FAILED")
	r1 := retryOne(e, first)
	e.waitStatus(r1, "FAILED")
	r2 := retryOne(e, r1)
	d := e.waitStatus(r2, "FAILED")
	if d.RootID != first || *d.RetryOf != r1 {
		t.Errorf("root_id %d retry_of %d, want %d and %d", d.RootID, *d.RetryOf, first, r1)
	}
	if len(d.Chain) != 3 {
		t.Errorf("chain %+v", d.Chain)
	}
	// The same job retried twice makes two retries, both linked.
	r3 := retryOne(e, first)
	e.waitStatus(r3, "FAILED")
	if got := e.show(first).Retries; !cmp.Equal(got, []int64{r1, r3}) {
		t.Errorf("retries of %d: %v", first, got)
	}
}

func retryOne(e *env, id int64) int64 {
	e.t.Helper()
	r := e.must("jobs", "retry", strconv.FormatInt(id, 10), "--reason", "again", "-o", "json")
	var res []contract.RetryResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 {
		e.t.Fatalf("retry: %v %s", err, r.stdout)
	}
	return res[0].Retry.ID
}

func TestRetryInvalidSetCreatesNothing(t *testing.T) {
	e := newEnv(t)
	f := e.write("task.yaml", "run: exit 1\n")
	id := e.launch(f)
	e.waitStatus(id, "FAILED")
	for _, set := range []string{"resources.job_recovery.recover_on_exit_codes=300", "resources.memroy=32"} {
		r := e.run("jobs", "retry", strconv.FormatInt(id, 10), "--reason", "x", "--set", set)
		if r.code != 2 {
			t.Errorf("--set %s: exit %d, want 2; %s", set, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, strings.SplitN(set, "=", 2)[0][:12]) {
			t.Errorf("--set %s: message does not name the field: %s", set, r.stderr)
		}
	}
	if r := e.run("jobs", "retry", strconv.FormatInt(id, 10)); r.code != 2 || !strings.Contains(r.stderr, "--reason") {
		t.Errorf("retry without --reason: exit %d %s", r.code, r.stderr)
	}
	if n := len(e.queue("-a")); n != 1 {
		t.Errorf("%d jobs, want 1", n)
	}
}
