package clouds

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"sortie/controller/config"
	"sortie/provision"
	"sortie/provision/sim"
	"sortie/schema"
)

// Sim is the cloud of hollow nodes, for scale and chaos tests of the
// controller.
func Sim() Cloud {
	return Cloud{Name: "sim", Task: schema.Cloud{Hidden: true},
		Prices:         configPrices("sim", func(cfg config.Config) config.ResourcePrices { return cfg.Sim.Prices }),
		PricedInConfig: true,
		Open: func(_ context.Context, cfg config.Config, log *slog.Logger) (provision.Provider, error) {
			c := SimConfig(cfg)
			c.Log = log
			if cfg.Sim.Shared {
				return sim.OpenShared(SimSharedDir(cfg.Home), c)
			}
			return sim.Open(SimStatePath(cfg.Home), c)
		}, Placements: func(ctx context.Context, cfg config.Config, r schema.Resources) ([]schema.Placement, error) {
			// A provider that is never launched on reads and saves no state.
			return sim.New(SimConfig(cfg)).Placements(ctx, r)
		}}
}

// SimConfig maps the sim: section onto the sim provider's configuration.
func SimConfig(cfg config.Config) sim.Config {
	s := cfg.Sim
	out := sim.Config{
		BootDelay: s.BootDelay.D(), RunTime: s.RunTime.D(), PreemptRate: s.PreemptRate, PreemptAttempts: s.PreemptAttempts,
		CapacityPerZone: s.CapacityPerZone, Seed: s.Seed, SaveEvery: 5 * time.Second, DecisionLog: s.DecisionLog,
		LoseNodesIn: s.LoseNodesIn,
	}
	if out.RunTime <= 0 {
		out.RunTime = 10 * time.Second
	}
	if s.SaveEvery != nil && s.SaveEvery.D() >= 0 {
		out.SaveEvery = s.SaveEvery.D()
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

// SimSharedDir is where the sim provider of home keeps its clusters when
// replicas of the controller share them.
func SimSharedDir(home string) string { return filepath.Join(home, "sim", "shared") }
