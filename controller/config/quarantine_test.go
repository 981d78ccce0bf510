package config

import (
	"strings"
	"testing"
	"time"

	"sortie/strategy"
)

func TestQuarantineSection(t *testing.T) {
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.QuarantinePolicy(), (strategy.QuarantinePolicy{Threshold: 3, HalfLife: 30 * time.Minute}); got != want {
		t.Errorf("left out: %+v, want %+v", got, want)
	}
	cfg, err = load(t, "quarantine:\n  threshold: 4\n  half_life: 1h\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.QuarantinePolicy(), (strategy.QuarantinePolicy{Threshold: 4, HalfLife: time.Hour}); got != want {
		t.Errorf("set: %+v, want %+v", got, want)
	}
	cfg, err = load(t, "", map[string]string{"SORTIE_QUARANTINE_THRESHOLD": "5", "SORTIE_QUARANTINE_HALF_LIFE": "10m"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.QuarantinePolicy(), (strategy.QuarantinePolicy{Threshold: 5, HalfLife: 10 * time.Minute}); got != want {
		t.Errorf("from the environment: %+v, want %+v", got, want)
	}
	cfg, err = load(t, "quarantine:\n  off: true\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.QuarantinePolicy(); got.Threshold != 0 {
		t.Errorf("off: %+v, want threshold 0 (off)", got)
	}
}

func TestQuarantineSectionErrors(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		env  map[string]string
		want string
	}{
		{"quarantine:\n  threshold: 1\n", nil, "line 2: quarantine.threshold: 1 is out of range; give a number from 2 to 100, or leave it out for 3"},
		{"quarantine:\n  threshold: many\n", nil, `line 2: quarantine.threshold: "many" is not a whole number`},
		{"quarantine:\n  half_life: 10s\n", nil, "line 2: quarantine.half_life: 10s is out of range; give a duration from 1m to 168h, or leave it out for 30m"},
		{"quarantine:\n  half_life: soon\n", nil, `line 2: quarantine.half_life: "soon" is not a duration`},
		{"quarantine:\n  off: maybe\n", nil, `line 2: quarantine.off: "maybe" is not true or false`},
		{"", map[string]string{"SORTIE_QUARANTINE_THRESHOLD": "1000"}, "environment variable SORTIE_QUARANTINE_THRESHOLD: 1000 is out of range"},
	} {
		_, err := load(t, tc.yaml, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %v: error %v, want it to say %q", tc.yaml, tc.env, err, tc.want)
		}
	}
}

func TestSimLoseNodesInNamesASimZone(t *testing.T) {
	if _, err := load(t, "sim:\n  lose_nodes_in: [sim-east-a]\n", nil); err != nil {
		t.Errorf("a default zone: %v", err)
	}
	_, err := load(t, "sim:\n  lose_nodes_in: [sim-east-a, us-east-1a]\n", nil)
	if want := `line 2: sim.lose_nodes_in[1]: "us-east-1a" is not a sim zone; use one of sim-east-a, sim-east-b, sim-west-a`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to say %q", err, want)
	}
	_, err = load(t, "sim:\n  regions:\n  - {name: r, zones: [r-a]}\n  lose_nodes_in: [sim-east-a]\n", nil)
	if want := `"sim-east-a" is not a sim zone; use one of r-a`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("with sim.regions: error %v, want it to say %q", err, want)
	}
}
