package config

import (
	"fmt"
	"slices"
	"strings"

	"sortie/schema"
)

// SimDefaultZones are the zones of the sim's default regions
// (provision/sim.DefaultRegions, which this package cannot import; a test
// of controller/clouds keeps the two in step).
var SimDefaultZones = []string{"sim-east-a", "sim-east-b", "sim-west-a"}

// simLoseProblems refuses a sim.lose_nodes_in zone the sim does not have:
// it would lose no node, silently.
func (cfg *Config) simLoseProblems(lines map[string]int) []schema.Problem {
	zones := SimDefaultZones
	if len(cfg.Sim.Regions) > 0 {
		zones = nil
		for _, r := range cfg.Sim.Regions {
			zones = append(zones, r.Zones...)
		}
	}
	var out []schema.Problem
	for i, z := range cfg.Sim.LoseNodesIn {
		if !slices.Contains(zones, z) {
			key := fmt.Sprintf("sim.lose_nodes_in[%d]", i)
			out = append(out, schema.Problem{Path: key, Line: lines[key],
				Message: fmt.Sprintf("%q is not a sim zone; use one of %s", z, strings.Join(zones, ", "))})
		}
	}
	return out
}
