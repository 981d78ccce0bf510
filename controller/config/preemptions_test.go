package config

import (
	"strings"
	"testing"
	"time"
)

func TestPreemptionsSection(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		env  map[string]string
		want time.Duration
	}{
		{"", nil, time.Hour},
		{"preemptions:\n  half_life: 20m\n", nil, 20 * time.Minute},
		{"", map[string]string{"SORTIE_PREEMPTIONS_HALF_LIFE": "2h"}, 2 * time.Hour},
		{"preemptions:\n  off: true\n", nil, 0},
	} {
		cfg, err := load(t, tc.yaml, tc.env)
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if got := cfg.PreemptionHalfLife(); got != tc.want {
			t.Errorf("%q %v: half-life %v, want %v", tc.yaml, tc.env, got, tc.want)
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"preemptions:\n  half_life: 5s\n", "line 2: preemptions.half_life: 5s is out of range; give a duration from 1m to 168h, or leave it out for 1h"},
		{"preemptions:\n  half_life: soon\n", `line 2: preemptions.half_life: "soon" is not a duration`},
		{"preemptions:\n  halflife: 1h\n", "preemptions.halflife"},
	} {
		_, err := load(t, tc.yaml, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to say %q", tc.yaml, err, tc.want)
		}
	}
}
