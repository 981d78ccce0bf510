package config

import "sortie/strategy"

// QuarantineConfig is the quarantine: section: placements where different
// jobs keep failing for reasons that are not their inputs' (a lost node,
// setup failing with one code for different inputs) are tried last for a
// while. See strategy.QuarantinePolicy for the rule.
type QuarantineConfig struct {
	// Threshold is how many different jobs must fail on one placement
	// within two half-lives (default 3).
	Threshold int `json:"threshold"`
	// HalfLife is how long a failure takes to weigh half as much (default
	// 30m): three jobs failing at once set a placement aside for one
	// half-life.
	HalfLife Duration `json:"half_life"`
	// Off turns quarantine off: every placement is tried in the strategy's
	// order whatever failed there.
	Off bool `json:"off"`
}

// QuarantinePolicy is the quarantine policy the controller applies.
func (cfg Config) QuarantinePolicy() strategy.QuarantinePolicy {
	if cfg.Quarantine.Off {
		return strategy.QuarantinePolicy{}
	}
	return strategy.QuarantinePolicy{Threshold: cfg.Quarantine.Threshold, HalfLife: cfg.Quarantine.HalfLife.D()}
}
