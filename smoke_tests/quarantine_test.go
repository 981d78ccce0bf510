package smoke_tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// Three jobs lose their node on sim-east-a: the zone is quarantined, the
// next job's launch goes to sim-east-b and its launch tries say why;
// `sortie quarantine` lists the zone and clears it.
func TestAZoneThatLosesNodesIsSetAside(t *testing.T) {
	e := newEnv(t)
	e.config("sim:\n  run_time: 1h\n  lose_nodes_in: [sim-east-a]\n")
	for i := range 3 {
		// Different inputs, each: the failures are the zone's, not theirs.
		f := e.write(fmt.Sprintf("lost%d.yaml", i), fmt.Sprintf(
			"resources: {cloud: sim, zone: sim-east-a, job_recovery: {strategy: NONE}}\nrun: train --part %d\n", i))
		id := e.launch(f)
		d := e.waitStatus(id, lifecycle.Failed)
		if len(d.Attempts) != 1 || d.Attempts[0].Outcome == nil || *d.Attempts[0].Outcome != "node_lost" {
			t.Fatalf("job %d: attempts %+v, want one that lost its node", id, d.Attempts)
		}
	}
	var qs []contract.QuarantineView
	if err := json.Unmarshal([]byte(e.must("quarantine", "-o", "json").stdout), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Zone != "sim-east-a" || len(qs[0].Jobs) != 3 || qs[0].Cause != "lost their node" {
		t.Fatalf("quarantine: %+v, want sim-east-a by 3 jobs", qs)
	}
	if out := e.must("quarantine", "list").stdout; !strings.Contains(out, "sim/sim-east/sim-east-a") || !strings.Contains(out, "lost their node") {
		t.Errorf("quarantine list:\n%s", out)
	}

	f := e.write("next.yaml", "resources: {cloud: sim, region: sim-east}\nrun: train --next\n")
	id := e.launch(f)
	d := e.waitStatus(id, lifecycle.Running)
	if len(d.Attempts) != 1 || deref(d.Attempts[0].Zone) != "sim-east-b" {
		t.Fatalf("the next job's attempts: %+v, want one on sim-east-b", d.Attempts)
	}
	if len(d.LaunchTries) != 1 || d.LaunchTries[0].Zone != "sim-east-a" || d.LaunchTries[0].Class != "set_aside" ||
		!strings.HasPrefix(d.LaunchTries[0].Message, "sim/sim-east/sim-east-a set aside until ") ||
		!strings.HasSuffix(d.LaunchTries[0].Message, ": 3 jobs lost their node there") {
		t.Errorf("the next job's launch tries: %+v, want one saying sim-east-a is set aside", d.LaunchTries)
	}
	if out := e.must("jobs", "show", fmt.Sprint(id)).stdout; !strings.Contains(out, "3 jobs lost their node there") {
		t.Errorf("jobs show does not say why:\n%s", out)
	}

	if out := e.must("quarantine", "clear", "sim/sim-east/sim-east-a").stdout; !strings.Contains(out, "Cleared the quarantine of sim/sim-east/sim-east-a") {
		t.Errorf("clear said %q", out)
	}
	if r := e.must("quarantine"); r.stdout != "" || !strings.Contains(r.stderr, "No placement is quarantined.") {
		t.Errorf("after the clear: %+v", r)
	}
	e.must("jobs", "cancel", fmt.Sprint(id))
}

// Three jobs with different inputs fail on sim-east-a only, under
// confirm_failures: each is run again on sim-east-b, succeeds there and is
// found flaky, which is evidence against sim-east-a: the zone is
// quarantined and the next job's launch tries it last.
func TestAZoneWhereInputsFailFlakilyIsSetAside(t *testing.T) {
	e := newEnv(t)
	e.config("sim:\n  run_time: 200ms\n")
	for i := range 3 {
		f := e.write(fmt.Sprintf("flaky%d.yaml", i), fmt.Sprintf(
			"resources: {cloud: sim, region: sim-east, job_recovery: {confirm_failures: 1}}\n"+
				"envs: {SIM_EXIT_CODE: \"3\", SIM_EXIT_ZONE: sim-east-a}\nrun: train --part %d\n", i))
		id := e.launch(f)
		d := e.waitStatus(id, lifecycle.Succeeded)
		if len(d.Attempts) != 2 || deref(d.Attempts[0].Zone) != "sim-east-a" || deref(d.Attempts[1].Zone) != "sim-east-b" ||
			deref(d.Attempts[1].Verdict) != contract.VerdictFlaky {
			t.Fatalf("job %d: attempts %+v, want a failure on sim-east-a found flaky on sim-east-b", id, d.Attempts)
		}
	}
	var qs []contract.QuarantineView
	if err := json.Unmarshal([]byte(e.must("quarantine", "-o", "json").stdout), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Zone != "sim-east-a" || len(qs[0].Jobs) != 3 || qs[0].Cause != "failed flakily" {
		t.Fatalf("quarantine: %+v, want sim-east-a by 3 jobs that failed flakily", qs)
	}
	if out := e.must("quarantine", "list").stdout; !strings.Contains(out, "sim/sim-east/sim-east-a") || !strings.Contains(out, "failed flakily") {
		t.Errorf("quarantine list:\n%s", out)
	}

	f := e.write("next.yaml", "resources: {cloud: sim, region: sim-east}\nrun: train --next\n")
	id := e.launch(f)
	d := e.waitStatus(id, lifecycle.Succeeded)
	if len(d.Attempts) != 1 || deref(d.Attempts[0].Zone) != "sim-east-b" {
		t.Fatalf("the next job's attempts: %+v, want one on sim-east-b", d.Attempts)
	}
	if len(d.LaunchTries) != 1 || d.LaunchTries[0].Zone != "sim-east-a" || d.LaunchTries[0].Class != "set_aside" ||
		!strings.HasSuffix(d.LaunchTries[0].Message, ": 3 jobs failed flakily there") {
		t.Errorf("the next job's launch tries: %+v, want one saying sim-east-a is set aside", d.LaunchTries)
	}
}

// Three jobs that asked for one instance type lose their node on
// sim-east-a: that type there is quarantined, not the zone. The next job
// that may use another type launches on it in sim-east-a first, trying the
// quarantined type last, and says why. When that job loses its node there
// too, the zone is to blame: it is quarantined instead, and cleared whole.
func TestAnInstanceTypeThatLosesNodesIsSetAside(t *testing.T) {
	e := newEnv(t)
	e.config("sim:\n  run_time: 1h\n  lose_nodes_in: [sim-east-a]\n")
	for i := range 3 {
		f := e.write(fmt.Sprintf("lost%d.yaml", i), fmt.Sprintf(
			"resources: {cloud: sim, zone: sim-east-a, instance_type: big, job_recovery: {strategy: NONE}}\nrun: train --part %d\n", i))
		d := e.waitStatus(e.launch(f), lifecycle.Failed)
		if len(d.Attempts) != 1 || deref(d.Attempts[0].Outcome) != "node_lost" {
			t.Fatalf("attempts %+v, want one that lost its node", d.Attempts)
		}
	}
	var qs []contract.QuarantineView
	if err := json.Unmarshal([]byte(e.must("quarantine", "-o", "json").stdout), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Placement != "sim/sim-east/sim-east-a/type=big" || qs[0].Level != "instance_type" ||
		qs[0].InstanceType == nil || *qs[0].InstanceType != "big" || len(qs[0].Jobs) != 3 {
		t.Fatalf("quarantine: %+v, want big in sim-east-a by 3 jobs", qs)
	}

	f := e.write("next.yaml", `resources:
  cloud: sim
  job_recovery: {strategy: NONE}
  ordered:
  - {zone: sim-east-a, instance_type: big}
  - {zone: sim-east-a, instance_type: small}
run: train --next
`)
	id := e.launch(f)
	d := e.waitFor(id, time.Minute, "its first attempt placed", func(d contract.JobDetail) bool {
		return len(d.Attempts) > 0 && d.Attempts[0].Zone != nil
	})
	if deref(d.Attempts[0].Zone) != "sim-east-a" {
		t.Errorf("the next job's attempt %+v, want it in sim-east-a", d.Attempts[0])
	}
	if len(d.LaunchTries) != 1 || d.LaunchTries[0].Zone != "sim-east-a" || d.LaunchTries[0].Class != "set_aside" ||
		!strings.HasPrefix(d.LaunchTries[0].Message, "big in sim/sim-east/sim-east-a set aside until ") {
		t.Errorf("the next job's launch tries: %+v, want one saying big is set aside in sim-east-a", d.LaunchTries)
	}
	// That job, on small, loses its node in sim-east-a too: jobs of two
	// types fail there now, so the zone is to blame, and the type's
	// quarantine folds into it.
	if d := e.waitStatus(id, lifecycle.Failed); deref(d.Attempts[0].Outcome) != "node_lost" {
		t.Fatalf("the next job's attempt %+v, want it to lose its node", d.Attempts[0])
	}
	qs = nil
	if err := json.Unmarshal([]byte(e.must("quarantine", "-o", "json").stdout), &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Placement != "sim/sim-east/sim-east-a" || qs[0].Level != "zone" || len(qs[0].Jobs) != 4 {
		t.Fatalf("quarantine: %+v, want the zone sim-east-a by 4 jobs", qs)
	}
	// A clear of the zone clears its types too.
	if out := e.must("quarantine", "clear", "sim/sim-east/sim-east-a").stdout; !strings.Contains(out, "Cleared the quarantine of sim/sim-east/sim-east-a:") {
		t.Errorf("clear said %q", out)
	}
	if r := e.must("quarantine"); r.stdout != "" {
		t.Errorf("after the clear: %+v", r)
	}
}
