package clouds

import (
	"slices"
	"testing"

	"sortie/controller/config"
	"sortie/provision/sim"
)

// config.SimDefaultZones, which checks sim.lose_nodes_in, are the zones of
// the sim's default regions.
func TestSimDefaultZonesAgree(t *testing.T) {
	var zones []string
	for _, r := range sim.DefaultRegions() {
		zones = append(zones, r.Zones...)
	}
	if !slices.Equal(zones, config.SimDefaultZones) {
		t.Errorf("config.SimDefaultZones %v, the sim's default zones %v", config.SimDefaultZones, zones)
	}
}

func TestSimConfigLosesNodesIn(t *testing.T) {
	var cfg config.Config
	cfg.Sim.LoseNodesIn = []string{"sim-east-a"}
	if got := SimConfig(cfg).LoseNodesIn; !slices.Equal(got, []string{"sim-east-a"}) {
		t.Errorf("LoseNodesIn %v, want [sim-east-a]", got)
	}
}
