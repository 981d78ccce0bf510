package strategy

import (
	"math"
	"slices"
	"time"

	"sortie/schema"
)

// DefaultPreemptionHalfLife is how long a preemption takes to weigh half as
// much when config.yaml's preemptions: section does not say.
const DefaultPreemptionHalfLife = time.Hour

// Preemption is one attempt the cloud took away: where, and when it ended.
type Preemption struct {
	Placement schema.Placement
	At        time.Time
}

// PreemptionWindow is how far back preemptions count: 4 half-lives, past
// which one weighs less than 1/16.
func PreemptionWindow(halfLife time.Duration) time.Duration { return 4 * halfLife }

// PreemptionWeights decays a history of preemptions into a weight per zone
// at now: each preemption weighs 1 when it happens and half as much every
// halfLife after; those older than PreemptionWindow or later than now
// weigh nothing. Placements are compared as PlacementKey makes them. A
// halfLife of zero or less weighs nothing.
func PreemptionWeights(ps []Preemption, now time.Time, halfLife time.Duration) map[schema.Placement]float64 {
	w := map[schema.Placement]float64{}
	if halfLife <= 0 {
		return w
	}
	from := now.Add(-PreemptionWindow(halfLife))
	for _, p := range ps {
		if p.At.Before(from) || p.At.After(now) {
			continue
		}
		age := now.Sub(p.At)
		w[PlacementKey(p.Placement)] += math.Exp2(-age.Seconds() / halfLife.Seconds())
	}
	return w
}

// AvoidPreempted orders the spot candidates on zones that preempted
// recently last: candidates keep their order, except that a spot candidate
// whose zone has a weight (PreemptionWeights) goes after every candidate
// without one, the less preempted of them first. On-demand candidates are
// never moved: a spot preemption says nothing of on-demand capacity. No
// candidate is dropped. The input is never modified.
func AvoidPreempted(cands []Candidate, weights map[schema.Placement]float64) []Candidate {
	out := slices.Clone(cands)
	if len(weights) == 0 {
		return out
	}
	weight := func(c Candidate) float64 {
		if !c.Resources.UseSpot {
			return 0
		}
		return weights[PlacementKey(c.Placement)]
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		wa, wb := weight(a), weight(b)
		switch {
		case wa < wb:
			return -1
		case wa > wb:
			return 1
		}
		return 0
	})
	return out
}
