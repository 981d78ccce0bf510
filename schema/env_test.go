package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const requiredEnvFile = `name: finetune
envs:
  HF_TOKEN:
  MODEL: llama
  CKPT: /ckpt
file_mounts:
  $CKPT/${MODEL}: ./weights/${MODEL}
  /other: ./$UNKNOWN/x
run: python train.py --model $MODEL
`

func TestRequiredEnvsAreFilledAtLaunch(t *testing.T) {
	p := mustParse(t, requiredEnvFile)
	task := p.Tasks[0]
	if diff := cmp.Diff([]string{"HF_TOKEN"}, task.RequiredEnvs); diff != "" {
		t.Errorf("RequiredEnvs (-want +got):\n%s", diff)
	}
	err := p.Unresolved(testClouds())
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Unresolved = %v, want a *ValidationError", err)
	}
	want := []Problem{{Path: "envs.HF_TOKEN", Message: "is required at launch; pass --env HF_TOKEN=VALUE or --env-file FILE"}}
	if diff := cmp.Diff(want, ve.Problems); diff != "" {
		t.Errorf("Unresolved (-want +got):\n%s", diff)
	}

	filled, err := ParseWith([]byte(requiredEnvFile), ParseOptions{Env: map[string]string{"HF_TOKEN": "hf_x", "MODEL": "mistral", "EXTRA": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := filled.Unresolved(testClouds()); err != nil {
		t.Errorf("Unresolved after --env = %v, want nil", err)
	}
	ft := filled.Tasks[0]
	if diff := cmp.Diff(map[string]string{"HF_TOKEN": "hf_x", "MODEL": "mistral", "CKPT": "/ckpt", "EXTRA": "1"}, ft.Envs); diff != "" {
		t.Errorf("Envs (-want +got):\n%s", diff)
	}
	if ft.RequiredEnvs != nil {
		t.Errorf("RequiredEnvs = %v after --env, want none", ft.RequiredEnvs)
	}
	// --env values are substituted, unknown variables are left as written.
	wantMounts := map[string]string{"/ckpt/mistral": "./weights/mistral", "/other": "./$UNKNOWN/x"}
	if diff := cmp.Diff(wantMounts, ft.FileMounts); diff != "" {
		t.Errorf("FileMounts (-want +got):\n%s", diff)
	}
}

func TestRequiredEnvsInAPipelineNameTheTask(t *testing.T) {
	p := mustParse(t, "run: a\n---\nenvs: {A: null, B: }\nrun: b\n")
	err := p.Unresolved(testClouds())
	want := "tasks[1].envs.A: is required at launch; pass --env A=VALUE or --env-file FILE\n" +
		"tasks[1].envs.B: is required at launch; pass --env B=VALUE or --env-file FILE"
	if err == nil || err.Error() != want {
		t.Errorf("Unresolved = %v, want\n%s", err, want)
	}
}

func TestRequiredEnvsSurviveStorageAndSet(t *testing.T) {
	p := mustParse(t, requiredEnvFile)
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(b, testClouds())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Tasks, back.Tasks); diff != "" {
		t.Errorf("Marshal/Unmarshal (-want +got):\n%s", diff)
	}
	same, _, err := ApplySet(back, nil, testClouds())
	if err != nil {
		t.Fatalf("ApplySet with nothing to set: %v", err)
	}
	if diff := cmp.Diff(p.Tasks, same.Tasks); diff != "" {
		t.Errorf("ApplySet round trip (-want +got):\n%s", diff)
	}
	set, overrides, err := ApplySet(back, []string{"envs.HF_TOKEN=hf_y"}, testClouds())
	if err != nil {
		t.Fatal(err)
	}
	if set.Tasks[0].RequiredEnvs != nil || set.Tasks[0].Envs["HF_TOKEN"] != "hf_y" {
		t.Errorf("after --set: envs %v, required %v", set.Tasks[0].Envs, set.Tasks[0].RequiredEnvs)
	}
	if err := set.Unresolved(testClouds()); err != nil {
		t.Errorf("Unresolved after --set = %v", err)
	}
	want := []Override{{Path: "envs.HF_TOKEN", Old: "null", New: "hf_y"}}
	if diff := cmp.Diff(want, overrides); diff != "" {
		t.Errorf("overrides (-want +got):\n%s", diff)
	}
}

func TestLaunchEnvNamesAreChecked(t *testing.T) {
	_, err := ParseWith([]byte("run: x\n"), ParseOptions{Env: map[string]string{"1BAD": "x"}})
	if err == nil || !strings.Contains(err.Error(), "--env 1BAD: is not a valid variable name") {
		t.Errorf("err = %v, want the bad --env name refused", err)
	}
}

func TestSubstitute(t *testing.T) {
	envs := map[string]string{"A": "1", "BB": "two", "A_B": "ab"}
	for in, want := range map[string]string{
		"$A":          "1",
		"${A}":        "1",
		"x/${BB}/y":   "x/two/y",
		"$A_B":        "ab",
		"${A}_B":      "1_B",
		"$C and ${C}": "$C and ${C}",
		"$$A":         "$1",
		"no vars":     "no vars",
		"${A":         "1",
		"$A}":         "1",
		"$1":          "$1",
	} {
		if got := substitute(in, envs); got != want {
			t.Errorf("substitute(%q) = %q, want %q", in, got, want)
		}
	}
}

// Python's str() of what PyYAML reads, as SkyPilot passes envs on.
func TestPythonNumber(t *testing.T) {
	for in, want := range map[string]string{
		"1.50": "1.5", "100.": "100.0", "0.00001": "1e-05", "0.0001": "0.0001", "1.0e+16": "1e+16",
		"1.5e-7": "1.5e-07", "123456789012345.6": "123456789012345.6", ".5": "0.5", "-2.0": "-2.0",
		"1_000.5": "1000.5",
		// Not floats to PyYAML: kept as written.
		"1e16": "1e16", "1.0e4": "1.0e4", "10": "10", "12345678901234567890123": "12345678901234567890123",
	} {
		if got := pythonNumber(in); got != want {
			t.Errorf("pythonNumber(%q) = %q, want %q", in, got, want)
		}
	}
}
