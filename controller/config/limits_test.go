package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/strategy"
)

func TestLimitsSection(t *testing.T) {
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.Preemption != PreemptNever || cfg.Limits.Preempts() {
		t.Errorf("left out: preemption %q, want never", cfg.Limits.Preemption)
	}
	if cfg.Limits.Any() || cfg.FairShare.HalfLife.D() != DefaultFairShareHalfLife {
		t.Errorf("left out: %+v %+v, want no limit and a week's half-life", cfg.Limits, cfg.FairShare)
	}
	cfg, err = load(t, `limits:
  server: {running_jobs: 20, gpus: {A100: 64}, hourly_cost: 40.5}
  per_user: {running_jobs: 10}
  users:
    alice: {gpus: {A100: 16}, vcpus: 128}
    root: {}
  groups:
    ml: {members: [alice, bob], nodes: 30}
  preemption: lower_priority
fair_share:
  half_life: 24h
  weights: {alice: 2}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := strategy.Limits{
		Server:      strategy.Amounts{strategy.Jobs: 20, strategy.GPU("A100"): 64, strategy.HourlyCost: 4050},
		DefaultUser: strategy.Amounts{strategy.Jobs: 10},
		Users: map[string]strategy.Amounts{
			"alice": {strategy.GPU("A100"): 16, strategy.VCPUs: 128},
			"root":  {},
		},
		Groups: []strategy.Group{{Name: "ml", Members: []string{"alice", "bob"}, Limit: strategy.Amounts{strategy.Nodes: 30}}},
	}
	if diff := cmp.Diff(want, cfg.Limits.Strategy()); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	if !cfg.Limits.Preempts() {
		t.Errorf("preemption %q, want lower_priority", cfg.Limits.Preemption)
	}
	if !cfg.Limits.Any() || cfg.FairShare.HalfLife.D() != 24*time.Hour || cfg.FairShare.Weights["alice"] != 2 {
		t.Errorf("fair_share: %+v", cfg.FairShare)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"limits:\n  server: {running_jobs: -1}\n", "line 2: limits.server.running_jobs: -1 is negative"},
		{"limits:\n  users:\n    alice: {gpus: {A100: -2}}\n", "limits.users.alice.gpus.A100: -2 is negative; give how many A100 GPUs"},
		{"limits:\n  groups:\n    ml: {nodes: 3}\n", "limits.groups.ml.members: is empty"},
		{"limits:\n  server: {gpu: {A100: 1}}\n", "limits.server.gpu"},
		{"limits:\n  users:\n    alice: 5\n", "limits.users.alice"},
		{"fair_share:\n  weights: {bob: 0}\n", "line 2: fair_share.weights.bob: 0 is not a weight; give a number above 0"},
		{"limits:\n  preemption: always\n", `line 2: limits.preemption: "always" is not a preemption policy; give never (the default: no running job is stopped for another) or lower_priority`},
		{"fair_share:\n  half_life: -1h\n", "fair_share.half_life: -1h0m0s is negative"},
		{"limits:\n  per_user: {hourly_cost: -5}\n", "line 2: limits.per_user.hourly_cost: -5 is not an amount; give the dollars running jobs may cost an hour"},
	} {
		_, err := load(t, tc.yaml, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to say %q", tc.yaml, err, tc.want)
		}
	}
}
