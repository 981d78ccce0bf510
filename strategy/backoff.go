package strategy

import (
	"math"
	"time"
)

// Backoff is a capped exponential back-off with optional jitter. The n-th
// retry waits Initial * Factor^(n-1), at most Max, less up to a Jitter
// fraction of that chosen at random.
type Backoff struct {
	// Initial is the wait before the first retry. Zero or less means no wait
	// at all.
	Initial time.Duration
	// Max caps every wait. Zero or less means no cap other than the largest
	// time.Duration.
	Max time.Duration
	// Factor multiplies the wait after each retry. Below 1 (including zero)
	// means 1: every retry waits Initial.
	Factor float64
	// Jitter is the fraction, in [0, 1], by which a wait may be shortened at
	// random, so that many jobs failing together do not retry in lockstep.
	// Zero means no jitter; values outside [0, 1] are clamped.
	Jitter float64
}

// DefaultRestartBackoff is the wait before a restart or recovery of a task.
//
// SkyPilot restarts at once, so a code that always exits with a listed code
// loops hot forever; Kubernetes Jobs start at 10s and double up to 10m. A
// restart here usually reuses a cluster that is already up, so the first
// retry can come sooner than Kubernetes' (2s catches most transient errors
// at little cost), and the cap is lower because the cluster is paid for while
// it waits: 2s, 4s, 8s ... reaches 5m on the 9th retry.
func DefaultRestartBackoff() Backoff {
	return Backoff{Initial: 2 * time.Second, Max: 5 * time.Minute, Factor: 2, Jitter: 0.2}
}

// DefaultLaunchBackoff is the wait between rounds of launch tries when every
// candidate placement has failed.
//
// SkyPilot starts at 60s, x1.6, capped at 300s. Spot capacity in a zone often
// returns within seconds to a few minutes, and a round that fails costs
// nothing but API calls, so the first wait is shorter (10s); the gentler 1.6
// growth and SkyPilot's 5m cap keep a long capacity drought from hammering
// the cloud's API: 10s, 16s, 26s, 41s, ... 5m from the 9th round.
func DefaultLaunchBackoff() Backoff {
	return Backoff{Initial: 10 * time.Second, Max: 5 * time.Minute, Factor: 1.6, Jitter: 0.2}
}

// Delay is the wait before retry n (1 for the first retry; n <= 0 waits
// nothing). rnd returns a number in [0, 1) and is only called when Jitter is
// above zero; a nil rnd means no jitter. The result is never negative, never
// above the cap, and is computed in floating point so a huge n saturates at
// the cap instead of overflowing. Without jitter it never decreases as n
// grows.
func (b Backoff) Delay(n int, rnd func() float64) time.Duration {
	if n <= 0 || b.Initial <= 0 {
		return 0
	}
	limit := b.Max
	if limit <= 0 {
		limit = math.MaxInt64
	}
	factor := b.Factor
	if factor < 1 || math.IsNaN(factor) {
		factor = 1
	}
	// Pow overflows to +Inf for a large n, which the comparison below turns
	// into the cap.
	d := float64(b.Initial) * math.Pow(factor, float64(n-1))
	wait := limit
	if d < float64(limit) {
		// float64(limit) may round above limit; d is below it, so the
		// conversion cannot overflow, but it may land just above the cap.
		wait = min(time.Duration(d), limit)
	}
	// Jitter applies after the cap so that jobs waiting at the cap spread out
	// too.
	if jitter := clamp01(b.Jitter); jitter > 0 && rnd != nil {
		cut := float64(wait) * jitter * clamp01(rnd())
		if cut >= float64(wait) {
			return 0
		}
		wait -= time.Duration(cut)
	}
	return max(wait, 0)
}

// clamp01 clamps f to [0, 1]; NaN becomes 0.
func clamp01(f float64) float64 {
	switch {
	case f > 1:
		return 1
	case f > 0:
		return f
	}
	return 0
}
