package clouds

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/config"
	"sortie/provision/sim"
)

func TestSimConfigFromYAML(t *testing.T) {
	home := t.TempDir()
	yaml := `sim:
  regions: [{name: r1, zones: [r1-a]}]
  boot_delay: 2s
  run_time: 2m
  exit_codes: [{code: 29, share: 0.1, attempt: 1}]
  preempt_rate: 0.05
  preempt_attempts: 1
  capacity_per_zone: 100
  seed: 7
  decision_log: sim/decisions.log
`
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(home, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	got := SimConfig(cfg)
	want := sim.Config{
		Regions: []sim.Region{{Name: "r1", Zones: []string{"r1-a"}}}, BootDelay: 2 * time.Second, RunTime: 2 * time.Minute,
		ExitCodes: []sim.ExitRule{{Code: 29, Share: 0.1, Attempt: 1}}, PreemptRate: 0.05, PreemptAttempts: 1,
		CapacityPerZone: 100, Seed: 7, SaveEvery: 5 * time.Second, DecisionLog: filepath.Join(home, "sim", "decisions.log"),
	}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type().Kind().String() == "func" || p.String() == "Log" }, cmp.Ignore())); diff != "" {
		t.Errorf("SimConfig (-want +got):\n%s", diff)
	}
	if d := SimConfig(config.Config{Home: home}); d.RunTime != 10*time.Second || d.SaveEvery != 5*time.Second {
		t.Errorf("defaults: run time %s, save every %s; want 10s and 5s", d.RunTime, d.SaveEvery)
	}
	for yaml, want := range map[string]time.Duration{"sim: {save_every: 0s}\n": 0, "sim: {save_every: 2s}\n": 2 * time.Second} {
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(home, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		if d := SimConfig(cfg); d.SaveEvery != want {
			t.Errorf("%q: save every %s, want %s (0: every change at once)", yaml, d.SaveEvery, want)
		}
	}
}
