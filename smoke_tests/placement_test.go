package smoke_tests

import (
	"os"
	"path/filepath"
	"sortie/controller/contract"
	"strconv"
	"strings"
	"testing"
	"time"
)

const twoRegions = `
local:
  regions:
    - name: r1
      zones: [r1-a, r1-b]
    - name: r2
      zones: [r2-a]
`

func (e *env) config(body string) {
	e.t.Helper()
	if err := os.MkdirAll(e.home, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func TestCapacityFailoverToNextZone(t *testing.T) {
	e := newEnv(t)
	e.must("local", "capacity", "local/local-a", "off")
	f := e.write("task.yaml", "run: echo ran in $SORTIE_ATTEMPT\n")
	id := e.launch(f)
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 1 || deref(d.Attempts[0].Zone) != "local-b" {
		t.Fatalf("attempts: %+v", d.Attempts)
	}
	if len(d.LaunchTries) != 1 || d.LaunchTries[0].Zone != "local-a" || d.LaunchTries[0].Class != "capacity" {
		t.Errorf("launch tries: %+v", d.LaunchTries)
	}
	if out := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout; !strings.Contains(out, "local-a") || !strings.Contains(out, "capacity") {
		t.Errorf("show does not list the failed try:\n%s", out)
	}
}

func TestPreemptionPlacementByStrategy(t *testing.T) {
	for _, tc := range []struct {
		strategy, wantRegion string
	}{
		{"EAGER_NEXT_REGION", "r2"},
		{"FAILOVER", "r1"},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			e := newEnv(t)
			e.config(twoRegions)
			marker := e.dir + "/started"
			f := e.write("task.yaml", `
resources:
  job_recovery: `+tc.strategy+`
run: |
  echo "attempt $SORTIE_ATTEMPT"
  if [ "$SORTIE_ATTEMPT" = 1 ]; then touch `+marker+`; sleep 300; fi
`)
			id := e.launch(f)
			waitFile(t, marker)
			d := e.waitStatus(id, "RUNNING")
			if got := deref(d.Attempts[0].Region); got != "r1" {
				t.Fatalf("first attempt in %s, want r1", got)
			}
			e.must("local", "preempt", strconv.FormatInt(id, 10))
			d = e.waitStatus(id, "SUCCEEDED")
			if len(d.Attempts) != 2 {
				t.Fatalf("attempts: %+v", d.Attempts)
			}
			if got := deref(d.Attempts[1].Region); got != tc.wantRegion {
				t.Errorf("after preemption in r1, %s ran in %s, want %s", tc.strategy, got, tc.wantRegion)
			}
			if !strings.Contains(deref(d.Attempts[0].Decision), "preemption") {
				t.Errorf("decision: %q", deref(d.Attempts[0].Decision))
			}
		})
	}
}

func TestNoCapacityAnywhere(t *testing.T) {
	e := newEnv(t, "SORTIE_LAUNCH_ROUNDS=2")
	e.config(twoRegions)
	e.must("local", "capacity", "r1", "off")
	e.must("local", "capacity", "r2", "off")
	f := e.write("task.yaml", "run: 'true'\n")
	id := e.launch(f)
	d := e.waitStatus(id, "FAILED_NO_RESOURCE")
	for _, z := range []string{"r1-a", "r1-b", "r2-a"} {
		if !strings.Contains(deref(d.FailureReason), z) {
			t.Errorf("failure_reason does not name %s: %q", z, deref(d.FailureReason))
		}
	}
	if len(d.LaunchTries) != 6 {
		t.Errorf("%d launch tries, want 3 placements x 2 rounds", len(d.LaunchTries))
	}
}

func TestCapacityBackDuringBackoff(t *testing.T) {
	e := newEnv(t, "SORTIE_LAUNCH_ROUNDS=50", "SORTIE_LAUNCH_BACKOFF_INITIAL=1s", "SORTIE_LAUNCH_BACKOFF_MAX=1s")
	e.must("local", "capacity", "local", "off")
	f := e.write("task.yaml", "run: 'true'\n")
	id := e.launch(f)
	d := e.waitFor(id, 30*time.Second, "PENDING with a reason", func(d contract.JobDetail) bool {
		return d.Status == "PENDING" && strings.Contains(deref(d.StatusReason), "next try in")
	})
	if !strings.Contains(deref(d.StatusReason), "local-a") || !strings.Contains(deref(d.StatusReason), "local-b") {
		t.Errorf("status reason: %q", deref(d.StatusReason))
	}
	e.must("local", "capacity", "local", "on")
	d = e.waitStatus(id, "SUCCEEDED")
	if len(d.LaunchTries) < 2 {
		t.Errorf("launch tries: %+v", d.LaunchTries)
	}
}

// etlPipeline fails at its second task; its third never runs.
const etlPipeline = `
name: etl
---
name: extract
run: echo extract
---
name: transform
run: echo transform; exit 6
---
name: load
run: echo load
`

func TestPipelineStopsAtFailedTask(t *testing.T) {
	e := newEnv(t)
	f := e.write("pipeline.yaml", etlPipeline)
	id := e.launch(f)
	d := e.waitStatus(id, "FAILED")
	if len(d.Tasks) != 3 {
		t.Fatalf("tasks: %+v", d.Tasks)
	}
	want := []string{"SUCCEEDED", "FAILED", "CANCELLED"}
	for i, task := range d.Tasks {
		if string(task.Status) != want[i] {
			t.Errorf("task %d (%s) %s, want %s", i, task.Name, task.Status, want[i])
		}
	}
	for _, a := range d.Attempts {
		if a.Task == 2 {
			t.Errorf("task 3 started: %+v", a)
		}
	}
	if d.Name != "etl" {
		t.Errorf("name %q", d.Name)
	}
	q := e.must("jobs", "queue").stdout
	if !strings.Contains(q, "2/3") {
		t.Errorf("queue does not show the current task:\n%s", q)
	}
}

func TestPipelineCancelSkipsRest(t *testing.T) {
	e := newEnv(t)
	marker := e.dir + "/started"
	f := e.write("pipeline.yaml", `
name: one
run: 'true'
---
name: two
run: touch `+marker+`; sleep 300
---
name: three
run: echo three
`)
	id := e.launch(f)
	waitFile(t, marker)
	e.must("jobs", "cancel", strconv.FormatInt(id, 10))
	d := e.waitStatus(id, "CANCELLED")
	want := []string{"SUCCEEDED", "CANCELLED", "CANCELLED"}
	for i, task := range d.Tasks {
		if string(task.Status) != want[i] {
			t.Errorf("task %d %s, want %s", i, task.Status, want[i])
		}
	}
}
