package strategy

import (
	"time"

	"sortie/controller/lifecycle"
)

// KeepRule names why a job's cluster was or was not kept when it ended.
type KeepRule string

const (
	KeepFailed     KeepRule = "KeepFailed"     // kept: the task failed and keep_on_failure asks for it
	KeepNotAsked   KeepRule = "KeepNotAsked"   // no keep_on_failure
	KeepNotFailure KeepRule = "KeepNotFailure" // the job goes on, succeeded, was cancelled or ended for another reason
	KeepNoCluster  KeepRule = "KeepNoCluster"  // the cloud took the cluster away (preempted, lost): nothing to keep
)

// Kept is whether, and until when, an ended job keeps its last attempt's
// cluster.
type Kept struct {
	Keep  bool
	Until time.Time // when Keep: when the cluster is torn down unless released before
	Rule  KeepRule
}

// KeepOnFailure is the keep_on_failure rule, applied to the decision d
// that Decide made for the attempt e at time now: the cluster of a job
// that ends FAILED or FAILED_SETUP because its task failed (its code, its
// setup, or max_duration running out while it ran) is kept for keepFor
// instead of being torn down. Nothing else keeps one: a restart reuses the
// cluster anyway, a success or a cancel has nothing to debug, a preemption
// or a lost node (also one that strategy NONE or max_recoveries turns into
// FAILED) left no cluster to keep, and a launch or controller failure ran
// no task on it. keepFor <= 0 keeps nothing.
//
// Keeping does not count toward max_duration: the job has ended (its
// ended_at is when it failed), and keep_on_failure is the only limit on
// how long its cluster stays.
func KeepOnFailure(keepFor time.Duration, e Ended, d Decision, now time.Time) Kept {
	switch {
	case keepFor <= 0:
		return Kept{Rule: KeepNotAsked}
	case e.Outcome == Preempted || e.Outcome == NodeLost:
		return Kept{Rule: KeepNoCluster}
	case d.Action != Fail || (d.Status != lifecycle.Failed && d.Status != lifecycle.FailedSetup):
		return Kept{Rule: KeepNotFailure}
	case e.Outcome != UserFailure && e.Outcome != SetupFailure && e.Outcome != TimedOut:
		return Kept{Rule: KeepNotFailure}
	}
	return Kept{Keep: true, Until: now.Add(keepFor), Rule: KeepFailed}
}

// Reasons a kept cluster was released, as `jobs show` says them.
const (
	ReleasedByUser   = "released by user (jobs release)"
	ReleasedByCancel = "released by jobs cancel"
	ReleasedExpired  = "keep_on_failure ran out"
)

// ReleaseDue says whether a cluster kept until until must be torn down at
// now, and why: at once when a user asked (requested is then the reason,
// ReleasedByUser or ReleasedByCancel), else once until has come.
func ReleaseDue(until time.Time, requested string, now time.Time) (reason string, due bool) {
	if requested != "" {
		return requested, true
	}
	if now.Before(until) {
		return "", false
	}
	return ReleasedExpired, true
}
