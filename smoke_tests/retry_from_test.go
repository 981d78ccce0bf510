package smoke_tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sortie/controller/contract"
	"strconv"
	"strings"
	"testing"
)

// A pipeline that failed in its second task is retried from that task: the
// first is linked (SUCCEEDED, pointing at the original's run) and not run
// again, the second and third run. A job that did not fail in a task is
// refused; a single-task job is retried whole.
func TestRetryFromTheFailedTask(t *testing.T) {
	e := newEnv(t, "SORTIE_USER=alice")
	runs := filepath.Join(e.dir, "prepare.runs")
	fixed := filepath.Join(e.dir, "fixed")
	f := e.write("pipeline.yaml", `name: pipe
---
name: prepare
run: echo ran >> `+runs+`
---
name: train
run: '[ -f `+fixed+` ] || exit 3'
---
name: report
run: echo done
`)
	orig := e.launch(f)
	e.waitStatus(orig, "FAILED")
	if err := os.WriteFile(fixed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.must("jobs", "retry", strconv.FormatInt(orig, 10), "--reason", "fixed the data", "--from-failed-task", "-o", "json")
	var res []contract.RetryResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 {
		t.Fatalf("retry -o json: %v %s", err, r.stdout)
	}
	if res[0].FromTask == nil || *res[0].FromTask != 1 {
		t.Errorf("from_task %v, want 1", res[0].FromTask)
	}
	id := res[0].Retry.ID
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Tasks) != 3 || d.Tasks[0].Status != "SUCCEEDED" || d.Tasks[0].LinkedFrom == nil ||
		*d.Tasks[0].LinkedFrom != (contract.TaskRef{Job: orig, Task: 0}) || d.Tasks[1].LinkedFrom != nil || d.Tasks[2].LinkedFrom != nil {
		t.Fatalf("tasks %+v; want task 0 linked to job %d task 0, the others run", d.Tasks, orig)
	}
	for _, a := range d.Attempts {
		if a.Task == 0 {
			t.Errorf("the linked task ran again: %+v", a)
		}
	}
	if b, _ := os.ReadFile(runs); string(b) != "ran\n" {
		t.Errorf("prepare ran %q; want once, by the original", b)
	}
	if d.RetryOf == nil || *d.RetryOf != orig || d.Trigger != "manual" {
		t.Errorf("retry_of %v trigger %s", d.RetryOf, d.Trigger)
	}
	table := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(table, "SUCCEEDED (linked: job "+strconv.FormatInt(orig, 10)+" task 0)") {
		t.Errorf("show does not say task 0 is linked:\n%s", table)
	}
	text := e.must("jobs", "retry", strconv.FormatInt(orig, 10), "--reason", "again", "--from-failed-task").stdout
	if !strings.Contains(text, "from task 1; tasks before it are linked") {
		t.Errorf("retry printed %q", text)
	}

	// A job that succeeded failed in no task.
	ref := e.run("jobs", "retry", strconv.FormatInt(id, 10), "--reason", "x", "--from-failed-task")
	if ref.code != 2 || !strings.Contains(ref.stderr, "ended SUCCEEDED: no task of it failed") {
		t.Errorf("retry of a SUCCEEDED job from its failed task: exit %d, %q; want 2 saying no task failed", ref.code, ref.stderr)
	}
	// A --set that changes a task the retry would link is refused.
	ref = e.run("jobs", "retry", strconv.FormatInt(orig, 10), "--reason", "x", "--from-failed-task", "--set", "tasks[0].envs.A=1")
	if ref.code != 2 || !strings.Contains(ref.stderr, "--set changes task 0") {
		t.Errorf("retry with a --set on a linked task: exit %d, %q; want 2 naming task 0", ref.code, ref.stderr)
	}

	// A single task has nothing to link: a plain retry.
	one := e.launch(e.write("one.yaml", "run: exit 1\n"))
	e.waitStatus(one, "FAILED")
	r = e.must("jobs", "retry", strconv.FormatInt(one, 10), "--reason", "once more", "--from-failed-task", "-o", "json")
	res = nil
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 || res[0].FromTask != nil {
		t.Fatalf("retry -o json of a single task: %v %s; want from_task null", err, r.stdout)
	}
	if d := e.waitStatus(res[0].Retry.ID, "FAILED"); len(d.Attempts) != 1 || d.Tasks[0].LinkedFrom != nil {
		t.Errorf("single-task retry: attempts %d, linked %v; want it run, unlinked", len(d.Attempts), d.Tasks[0].LinkedFrom)
	}
}
