package smoke_tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/controller/contract"
)

// confirmTask is a sim task that confirms its failures; its envs say
// where the hollow nodes fail it.
func confirmTask(name, envs string) string {
	return "name: " + name + `
resources:
  cloud: sim
  job_recovery: {confirm_failures: 1}
envs: {` + envs + `}
run: train
`
}

// On sim, inputs that fail everywhere are run again in another zone, fail
// the same way, and are a deterministic known failure: refused on
// relaunch. Inputs that fail in one zone only are run again elsewhere,
// succeed, and are flaky: listed, counted, never refused.
func TestConfirmFailuresOnSim(t *testing.T) {
	e := newEnv(t)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte("sim:\n  run_time: 200ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	always := e.write("always.yaml", confirmTask("always", `SIM_EXIT_CODE: "3"`))
	id := e.launch(always)
	d := e.waitStatus(id, "FAILED")
	if len(d.Attempts) != 2 || d.Attempts[1].Confirms == nil || *d.Attempts[1].Confirms != 1 ||
		deref(d.Attempts[0].Zone) == deref(d.Attempts[1].Zone) || deref(d.Attempts[1].Verdict) != contract.VerdictDeterministic {
		t.Fatalf("attempts of the failing job: %+v", d.Attempts)
	}
	if d.FailureReason == nil || !strings.HasPrefix(*d.FailureReason, "deterministic: exit 3 twice (") {
		t.Errorf("failure reason %v, want deterministic", d.FailureReason)
	}
	if !strings.HasPrefix(deref(d.Attempts[0].Decision), "confirming failure: exit code 3 in ") {
		t.Errorf("first attempt's decision %q", deref(d.Attempts[0].Decision))
	}
	if r := e.run("jobs", "launch", "-d", always); r.code != 3 {
		t.Errorf("relaunch of a deterministic failure: exit %d, want 3 (refused); %s", r.code, r.stderr)
	}

	oneZone := e.write("one-zone.yaml", confirmTask("one-zone", `SIM_EXIT_CODE: "3", SIM_EXIT_ZONE: `+deref(d.Attempts[0].Zone)))
	var last int64
	for range 3 {
		last = e.launch(oneZone)
		d = e.waitStatus(last, "SUCCEEDED")
		if len(d.Attempts) != 2 || !strings.HasPrefix(deref(d.Attempts[1].Decision), "flaky: exit 3 then 0") {
			t.Fatalf("attempts of the flaky job: %+v", d.Attempts)
		}
	}
	if d.Flaky == nil || d.Flaky.Flaky != 3 || d.Flaky.Runs != 3 {
		t.Errorf("show's flaky count: %+v, want 3 of 3", d.Flaky)
	}
	if out := e.must("jobs", "show", strconv.FormatInt(last, 10)).stdout; !strings.Contains(out, "flaky 3 of 3 runs") || !strings.Contains(out, "2 (confirms 1)") {
		t.Errorf("jobs show lacks the flaky count or the confirming attempt:\n%s", out)
	}

	var det, flaky *contract.FailureView
	for _, f := range failures(e) {
		switch f.Verdict {
		case contract.VerdictDeterministic:
			det = &f
		case contract.VerdictFlaky:
			flaky = &f
		}
	}
	if det == nil || det.JobID != id || len(det.Evidence) != 2 {
		t.Errorf("deterministic failure: %+v", det)
	}
	if flaky == nil || flaky.JobID != last || flaky.Flaky != 3 || len(flaky.Evidence) != 2 || flaky.Evidence[1].Outcome != "succeeded" {
		t.Errorf("flaky inputs: %+v", flaky)
	}
	out := e.must("jobs", "failures").stdout
	for _, want := range []string{"deterministic", "flaky (3 of 3 runs)"} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs failures lacks %q:\n%s", want, out)
		}
	}
	// Flaky inputs are never refused.
	e.launch(oneZone)
}
