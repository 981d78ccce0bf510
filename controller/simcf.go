package controller

import (
	"context"
	"path/filepath"
	"time"

	"sortie/provision"
	"sortie/provision/sim"
)

// SimCf is the sim: section, the cloud of hollow nodes used for scale and
// chaos tests of the controller.
type SimCf struct {
	// Regions and their zones; empty means sim's default two regions.
	Regions []LocalRegion `json:"regions"`
	// BootDelay is how long a launch takes (default 0).
	BootDelay Duration `json:"boot_delay"`
	// RunTime is how long every task runs (default 10s).
	RunTime Duration `json:"run_time"`
	// ExitCodes make a share of tasks exit with a code on an attempt.
	ExitCodes []SimExitRule `json:"exit_codes"`
	// PreemptRate is the share of clusters preempted while their first
	// task runs; PreemptAttempts limits it to the first attempts (0: all).
	PreemptRate     float64 `json:"preempt_rate"`
	PreemptAttempts int     `json:"preempt_attempts"`
	// CapacityPerZone is how many nodes a zone holds (0: unlimited).
	CapacityPerZone int `json:"capacity_per_zone"`
	// Seed makes the random choices repeat from run to run.
	Seed uint64 `json:"seed"`
	// SaveEvery bounds how often the sim's state is saved under
	// $SORTIE_HOME/sim (default 5s: encoding 10,000 clusters costs the
	// controller's process tens of milliseconds of CPU each time, which a
	// real cloud does not).
	SaveEvery Duration `json:"save_every"`
	// DecisionLog, when set, is a file (relative to $SORTIE_HOME) where the
	// sim records when the controller saw each attempt end and when it
	// asked for the next one.
	DecisionLog string `json:"decision_log"`
}

// SimExitRule is one sim.exit_codes item.
type SimExitRule struct {
	Code    int     `json:"code"`
	Share   float64 `json:"share"`
	Attempt int     `json:"attempt"` // 1-based; 0 means every attempt
}

// SimConfig is the sim provider's configuration from the sim: section.
func (cfg Config) SimConfig() sim.Config {
	s := cfg.Sim
	out := sim.Config{
		BootDelay: s.BootDelay.D(), RunTime: s.RunTime.D(), PreemptRate: s.PreemptRate, PreemptAttempts: s.PreemptAttempts,
		CapacityPerZone: s.CapacityPerZone, Seed: s.Seed, SaveEvery: s.SaveEvery.D(), DecisionLog: s.DecisionLog,
	}
	if out.RunTime <= 0 {
		out.RunTime = 10 * time.Second
	}
	if out.SaveEvery <= 0 {
		out.SaveEvery = 5 * time.Second
	}
	if out.DecisionLog != "" && !filepath.IsAbs(out.DecisionLog) {
		out.DecisionLog = filepath.Join(cfg.Home, out.DecisionLog)
	}
	for _, r := range s.Regions {
		out.Regions = append(out.Regions, sim.Region{Name: r.Name, Zones: r.Zones})
	}
	for _, r := range s.ExitCodes {
		out.ExitCodes = append(out.ExitCodes, sim.ExitRule{Code: r.Code, Share: r.Share, Attempt: r.Attempt})
	}
	return out
}

// SimStatePath is where the sim provider of home keeps its clusters.
func SimStatePath(home string) string { return filepath.Join(home, "sim", "state.json") }

// OpenSim opens the sim provider of cfg's home, for ProviderSet.Extra.
func OpenSim(ctx context.Context, cfg Config) (provision.Provider, error) {
	return sim.Open(SimStatePath(cfg.Home), cfg.SimConfig())
}
