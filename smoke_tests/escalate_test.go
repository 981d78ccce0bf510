package smoke_tests

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// escalateTask exits 137, as the kernel's OOM killer makes a task exit,
// while the memory its attempt asked for (SORTIE_MEMORY_GB) is below need.
func escalateTask(need, maxMemory string) string {
	return `
name: build
resources:
  memory: 16+
  job_recovery:
    max_restarts_on_errors: 3
    escalate: {on_exit_codes: [137], memory: 2x, max_memory: ` + maxMemory + `}
run: |
  echo "memory $SORTIE_MEMORY_GB GB"
  if [ "$SORTIE_MEMORY_GB" -lt ` + need + ` ]; then echo "out of memory"; exit 137; fi
  echo built
`
}

// On local, a task that runs out of memory at 16 GB escalates to 32 GB on
// a new cluster and succeeds there; show, queue and the logs say so, and
// the -o json output holds to the OpenAPI schemas.
func TestEscalationOnLocal(t *testing.T) {
	e := newEnv(t)
	id := e.launch(e.write("build.yaml", escalateTask("32", "64")))
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 2 {
		t.Fatalf("%d attempts, want 2: %+v", len(d.Attempts), d.Attempts)
	}
	first, second := d.Attempts[0], d.Attempts[1]
	if deref(first.Action) != "escalate" || deref(first.Decision) != "exit code 137: memory 16 → 32 GB; restart 1/3 on errors" || first.Size != nil {
		t.Errorf("first attempt: action %q, decision %q, size %+v", deref(first.Action), deref(first.Decision), first.Size)
	}
	if second.Size == nil || deref(second.Size.Memory) != "32+" || second.Cluster == first.Cluster {
		t.Errorf("second attempt: size %+v on %s (first on %s); want memory 32+ on a new cluster", second.Size, second.Cluster, first.Cluster)
	}
	if d.Size == nil || deref(d.Size.Memory) != "32+" || d.RestartsOnErrors != 1 {
		t.Errorf("job: size %+v, %d restarts on errors; want memory 32+, 1", d.Size, d.RestartsOnErrors)
	}
	if logs := e.must("jobs", "logs", strconv.FormatInt(id, 10), "--attempt", "2").stdout; !strings.Contains(logs, "memory 32 GB") || !strings.Contains(logs, "built") {
		t.Errorf("attempt 2's log %q, want it run with 32 GB", logs)
	}
	text := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout
	for _, want := range []string{"Escalated to:  memory 32 GB", "(memory 32 GB)", "memory 16 → 32 GB"} {
		if !strings.Contains(text, want) {
			t.Errorf("jobs show lacks %q:\n%s", want, text)
		}
	}
	q := e.queue("-a")
	if len(q) != 1 || q[0].Size == nil || deref(q[0].Size.Memory) != "32+" {
		t.Errorf("queue: %+v, want the job with size memory 32+", q)
	}
	c := newConformer(loadOpenAPI(t), contractMasks)
	c.conform("show", "show", decodeJSON(t, e.must("jobs", "show", strconv.FormatInt(id, 10), "-o", "json").stdout), ref("show"))
	c.report(t)
	e.waitNoClusters("after the escalated job")
}

// At the top of its escalation the job ends FAILED saying nothing bigger
// is left; its inputs are a known failure at that size, and a launch of
// the same file is refused naming it.
func TestEscalationEndsAtTheTopOnLocal(t *testing.T) {
	e := newEnv(t)
	f := e.write("build.yaml", escalateTask("64", "32"))
	id := e.launch(f)
	d := e.waitStatus(id, "FAILED")
	want := "exit code 137 matched escalate.on_exit_codes [137], but nothing bigger is left (memory 32 GB is max_memory)"
	if deref(d.FailureReason) != want || len(d.Attempts) != 2 {
		t.Fatalf("failure %q after %d attempts, want %q after 2", deref(d.FailureReason), len(d.Attempts), want)
	}
	var fs []struct {
		JobID int64 `json:"job_id"`
		Size  *struct {
			Memory *string `json:"memory"`
		} `json:"size"`
	}
	if err := json.Unmarshal([]byte(e.must("jobs", "failures", "-o", "json").stdout), &fs); err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].JobID != id || fs[0].Size == nil || deref(fs[0].Size.Memory) != "32+" {
		t.Errorf("known failures %+v, want job %d at memory 32+", fs, id)
	}
	r := e.run("jobs", "launch", "-d", f)
	if r.code != 3 || !strings.Contains(r.stderr, "(exit code 137 at memory 32 GB, ") {
		t.Errorf("the same file again: exit %d, %q; want 3, refused at memory 32 GB", r.code, r.stderr)
	}
	e.waitNoClusters("after the failed escalation")
}

// A dry run shows the escalation and the limits, in text and in -o json
// as the OpenAPI schema of a plan says.
func TestDryRunShowsTheEscalation(t *testing.T) {
	e := newEnv(t)
	f := e.write("build.yaml", strings.Replace(escalateTask("32", "64"), "max_restarts_on_errors: 3", "max_restarts_on_errors: 3\n    max_duration: 2h", 1))
	r := e.must("jobs", "launch", "--dry-run", f)
	for _, want := range []string{"Limits:      max_duration 2h\n", "Escalate:    on exit codes 137: memory 2x up to 64 GB\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the plan lacks %q:\n%s", want, r.stdout)
		}
	}
	j := e.must("jobs", "launch", "--dry-run", "-o", "json", f)
	c := newConformer(loadOpenAPI(t), map[string]string{"input_key": "<input-key>"})
	c.conform("plan", "plan", decodeJSON(t, j.stdout), ref("plan"))
	c.report(t)
	for path, want := range map[string]any{
		"tasks.0.max_duration":             "2h",
		"tasks.0.max_recoveries":           nil,
		"tasks.0.escalate.memory":          "2x",
		"tasks.0.escalate.max_memory":      "64",
		"tasks.0.escalate.on_exit_codes.0": json.Number("137"),
	} {
		if got := dig(decodeJSON(t, j.stdout), path); got != want {
			t.Errorf("plan %s is %v, want %v", path, got, want)
		}
	}
}
