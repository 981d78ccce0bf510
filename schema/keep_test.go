package schema

import (
	"strings"
	"testing"
)

// TestInvalidUTF8IsRefusedNotRewritten: bytes that are not UTF-8 in an
// --env or --set value were stored as U+FFFD (JSON's replacement); in a
// file YAML refused them without a place. Each is refused, placed.
func TestInvalidUTF8IsRefusedNotRewritten(t *testing.T) {
	in := mustParse(t, "run: x\n")
	_, _, err := ApplySet(in, []string{"envs.A=a\xffb"}, testClouds())
	want := "envs.A: holds a byte that is not UTF-8 (0xff at byte 2 of the value); sortie keeps text only as UTF-8: give it in UTF-8"
	if err == nil || err.Error() != want {
		t.Errorf("ApplySet = %v\nwant %s", err, want)
	}
	_, _, err = ApplySet(in, []string{"envs.\xfe=b"}, testClouds())
	if err == nil || !strings.Contains(err.Error(), `envs.\xfe: holds a byte that is not UTF-8 (0xfe at byte 6 of the path)`) {
		t.Errorf("ApplySet with a bad path = %v", err)
	}
	_, err = ParseWith([]byte("run: x\n"), ParseOptions{Env: map[string]string{"A": "\xc3("}})
	if err == nil || !strings.Contains(err.Error(), "--env A: holds a byte that is not UTF-8 (0xc3 at byte 1 of the value)") {
		t.Errorf("ParseWith a bad --env = %v", err)
	}
	_, err = Parse([]byte("run: x\nenvs:\n  A: \"é\xff\"\n"), testClouds())
	want = "line 3, column 8: byte 0xff is not UTF-8; save the file as UTF-8 (sortie changes no text it reads)"
	if err == nil || err.Error() != want {
		t.Errorf("Parse = %v\nwant %s", err, want)
	}
	got, _, err := ApplySet(in, []string{"envs.A=é✓"}, testClouds())
	if err != nil || got.Tasks[0].Envs["A"] != "é✓" {
		t.Errorf("ApplySet of valid UTF-8 = %v, %v", got, err)
	}
}

// TestAmountsKeepTheirDigits: cpus and memory passed through a float, so
// 12345678901234567890123 became 12345678901234568000000.
func TestAmountsKeepTheirDigits(t *testing.T) {
	p := mustParse(t, "run: x\nresources:\n  cpus: 12345678901234567890123\n  memory: 1.0000000000000000001+\n")
	r := p.Tasks[0].Resources
	if r.CPUs != "12345678901234567890123" || r.Memory != "1.0000000000000000001+" {
		t.Errorf("cpus %q, memory %q; want them as written", r.CPUs, r.Memory)
	}
	for text, want := range map[string]string{"512MB": "0.5", "1.50": "1.5", "2TB+": "2048+", "1KB": "0.00000095367431640625", "0.1MB": "0.00009765625"} {
		p := mustParse(t, "run: x\nresources: {memory: \""+text+"\"}\n")
		if got := p.Tasks[0].Resources.Memory; got != want {
			t.Errorf("memory %s = %q; want %q", text, got, want)
		}
	}
	_, err := Parse([]byte("run: x\nresources: {cpus: "+strings.Repeat("9", 65)+"}\n"), testClouds())
	if err == nil || !strings.Contains(err.Error(), "resources.cpus: "+strings.Repeat("9", 65)+" has more than 64 digits") {
		t.Errorf("Parse of a 65-digit cpus = %v", err)
	}
}

// TestInfinityIsRefusedWithItsField: .inf and .nan gave "json:
// unsupported value: +Inf" with no field; they are text, and a field
// that wants a number says so.
func TestInfinityIsRefusedWithItsField(t *testing.T) {
	for _, v := range []string{".inf", "-.inf", ".nan", "1e400"} {
		for _, field := range []string{"num_nodes", "resources.cpus", "resources.memory", "resources.disk_size",
			"resources.job_recovery.max_restarts_on_errors", "resources.accelerators.A100"} {
			in := mustParse(t, "run: x\n")
			_, _, err := ApplySet(in, []string{field + "=" + v}, testClouds())
			if err == nil || !strings.HasPrefix(err.Error(), field+": ") {
				t.Errorf("--set %s=%s: %v; want refused naming the field", field, v, err)
			}
		}
		p := mustParse(t, "run: x\nenvs: {A: "+v+"}\n")
		if _, err := p.Marshal(); err != nil || p.Tasks[0].Envs["A"] != v {
			t.Errorf("envs.A: %s is %q (%v); want the text as written", v, p.Tasks[0].Envs["A"], err)
		}
	}
}
