package config

import (
	"time"

	"sortie/strategy"
)

// PreemptionsConfig is the preemptions: section: spot candidates in zones
// that preempted recently are tried after the others. Each preemption
// weighs 1 when it happens and half as much every HalfLife after (see
// strategy.PreemptionWeights); the history is read from the store, so
// every replica of a team server orders alike.
type PreemptionsConfig struct {
	// HalfLife is how long a preemption takes to weigh half as much
	// (default 1h, SORTIE_PREEMPTIONS_HALF_LIFE).
	HalfLife Duration `json:"half_life"`
	// Off keeps the order whatever was preempted where.
	Off bool `json:"off"`
}

// PreemptionHalfLife is the half-life the controller decays preemptions
// with; zero when the section is off.
func (cfg Config) PreemptionHalfLife() time.Duration {
	if cfg.Preemptions.Off {
		return 0
	}
	return cfg.Preemptions.HalfLife.D()
}

// defaultPreemptionHalfLife is the half-life when config.yaml gives none.
const defaultPreemptionHalfLife = strategy.DefaultPreemptionHalfLife
