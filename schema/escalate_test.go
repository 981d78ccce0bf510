package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFactorJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Factor
		ok   bool
	}{
		{`"2x"`, 2, true}, {`"1.5X"`, 1.5, true}, {`" 3 x"`, 3, true},
		{`"1x"`, 0, false}, {`"0x"`, 0, false}, {`"2"`, 0, false}, {`"x"`, 0, false}, {`2`, 0, false},
	} {
		var f Factor
		err := json.Unmarshal([]byte(tc.in), &f)
		if (err == nil) != tc.ok || f != tc.want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v, ok %v", tc.in, f, err, tc.want, tc.ok)
		}
	}
	b, _ := json.Marshal(Factor(1.5))
	if string(b) != `"1.5x"` {
		t.Errorf("Marshal(1.5) = %s, want \"1.5x\"", b)
	}
}

// TestEscalateKeepsOldKeys: a task without escalate hashes as it did
// before escalate existed (the key below was computed by the release
// without it), so known failures stored then still refuse the same
// inputs; adding escalate to the same task makes other inputs.
func TestEscalateKeepsOldKeys(t *testing.T) {
	const file = "resources: {memory: 16+, job_recovery: {max_restarts_on_errors: 2, recover_on_exit_codes: [29]}}\nrun: make\n"
	const before = "378fd5bdc42cd6f268b259e8e3efe62ee50d3021146f2c364dfc8ec5ebceb9fe"
	p, err := Parse([]byte(file), testClouds())
	if err != nil {
		t.Fatal(err)
	}
	key, err := InputKey(p.Tasks[0], t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if key != before {
		t.Errorf("the key of a task without escalate changed: %s, was %s", key, before)
	}
	withEscalate := strings.Replace(file, "[29]}", "[29], escalate: {on_exit_codes: [137], memory: 2x}}", 1)
	q, err := Parse([]byte(withEscalate), testClouds())
	if err != nil {
		t.Fatal(err)
	}
	other, err := InputKey(q.Tasks[0], t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if other == key {
		t.Error("adding escalate did not change the input key")
	}
}

// TestEscalateStoredSpec: the stored spec reads back as a task file, so a
// retry's --set can change the escalation like any field.
func TestEscalateStoredSpec(t *testing.T) {
	p, err := Parse([]byte("resources: {memory: 16+, job_recovery: {max_restarts_on_errors: 2, escalate: {on_exit_codes: [137], memory: 2x, max_memory: 64}}}\nrun: make\n"), testClouds())
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(b, testClouds())
	if err != nil {
		t.Fatal(err)
	}
	set, overrides, err := ApplySet(back, []string{"resources.job_recovery.escalate.max_memory=128"}, testClouds())
	if err != nil {
		t.Fatalf("ApplySet: %v", err)
	}
	want := &Escalate{OnExitCodes: []int{137}, Memory: 2, MaxMemory: "128"}
	if diff := cmp.Diff(want, set.Tasks[0].Resources.JobRecovery.Escalate); diff != "" {
		t.Errorf("escalate after --set (-want +got):\n%s", diff)
	}
	if len(overrides) != 1 || overrides[0].Old != "64" || overrides[0].New != "128" {
		t.Errorf("overrides = %+v", overrides)
	}
	if _, _, err := ApplySet(back, []string{"resources.job_recovery.escalate.memory=0x"}, testClouds()); err == nil ||
		!strings.Contains(err.Error(), `resources.job_recovery.escalate.memory: "0x" would never grow memory`) {
		t.Errorf("--set memory=0x: %v", err)
	}
}
