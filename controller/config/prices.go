package config

import (
	"fmt"
	"math"
	"sort"
	"time"

	"sortie/schema"
)

// PricesConfig is the prices: section: how often sortie reads the clouds'
// prices again. Prices are cached in the store; one older than its
// interval (because the cloud's API could not be reached) is stale, and a
// cost counted with it is an estimate.
type PricesConfig struct {
	// OnDemandRefresh is how often on-demand price lists are read
	// (default 24h).
	OnDemandRefresh Duration `json:"on_demand_refresh"`
	// SpotRefresh is how often spot prices are read (default 5m).
	SpotRefresh Duration `json:"spot_refresh"`
}

// The defaults of the prices: section.
const (
	DefaultOnDemandRefresh = 24 * time.Hour
	DefaultSpotRefresh     = 5 * time.Minute
)

func (p *PricesConfig) fillDefaults() {
	if p.OnDemandRefresh <= 0 {
		p.OnDemandRefresh = Duration(DefaultOnDemandRefresh)
	}
	if p.SpotRefresh <= 0 {
		p.SpotRefresh = Duration(DefaultSpotRefresh)
	}
}

// ResourcePrices are what a node of a cloud sortie does not read prices
// of (local, sim, kubernetes) costs, per resource, in dollars per hour:
// the local.prices, sim.prices and kubernetes.prices keys. Every price is
// 0 unless set, so a team charges what it decides its own machines cost.
type ResourcePrices struct {
	// NodeHour is the price of a node, whatever its size.
	NodeHour float64 `json:"node_hour"`
	// CPUHour is the price of one vCPU the node asks for.
	CPUHour float64 `json:"cpu_hour"`
	// MemoryGBHour is the price of one GB of memory the node asks for.
	MemoryGBHour float64 `json:"memory_gb_hour"`
	// AcceleratorHour is the price of one accelerator of each type
	// (A100, T4), by the name a task's accelerators give it.
	AcceleratorHour map[string]float64 `json:"accelerator_hour"`
	// Spot, when set, are the prices of a use_spot node (a cluster's
	// spot node pool); left out, a spot node costs what another does.
	Spot *ResourcePrices `json:"spot"`
}

// pricesProblems checks the prices: intervals and every cloud's
// resource prices: a price is a number of dollars, 0 or more.
func (cfg *Config) pricesProblems(lines map[string]int) []schema.Problem {
	var out []schema.Problem
	check := func(key string, p *ResourcePrices) {
		var each func(key string, p *ResourcePrices, spot bool)
		each = func(key string, p *ResourcePrices, spot bool) {
			num := func(k string, v float64) {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e6 {
					out = append(out, schema.Problem{Path: k, Line: lines[k],
						Message: fmt.Sprintf("%v is not a price; give dollars per hour from 0 to 1000000 (0, the default, charges nothing)", v)})
				}
			}
			num(key+".node_hour", p.NodeHour)
			num(key+".cpu_hour", p.CPUHour)
			num(key+".memory_gb_hour", p.MemoryGBHour)
			names := make([]string, 0, len(p.AcceleratorHour))
			for n := range p.AcceleratorHour {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				k := key + ".accelerator_hour." + n
				if n == "" {
					out = append(out, schema.Problem{Path: key + ".accelerator_hour", Line: lines[key+".accelerator_hour"],
						Message: `an accelerator with no name; name it as tasks do (A100: 2.5)`})
					continue
				}
				num(k, p.AcceleratorHour[n])
			}
			if p.Spot != nil {
				if spot {
					out = append(out, schema.Problem{Path: key + ".spot", Line: lines[key+".spot"],
						Message: "spot prices have no spot prices of their own; remove it"})
				} else {
					each(key+".spot", p.Spot, true)
				}
			}
		}
		each(key, p, false)
	}
	check("local.prices", &cfg.Local.Prices)
	check("sim.prices", &cfg.Sim.Prices)
	check("kubernetes.prices", &cfg.Kubernetes.Prices)
	return out
}
