package strategy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"sortie/controller/lifecycle"
	"sortie/schema"
)

// Rules of the confirmation of a failure (job_recovery.confirm_failures).
const (
	RuleConfirming    Rule = "ConfirmingFailure"
	RuleDeterministic Rule = "Deterministic"
	RuleFlaky         Rule = "Flaky"
)

// VerdictKind says whether a confirmed failure is the inputs' own.
type VerdictKind string

const (
	// Deterministic: the confirmation run failed the same way again.
	Deterministic VerdictKind = "deterministic"
	// Flaky: the confirmation run ended otherwise (another exit code, or
	// success).
	Flaky VerdictKind = "flaky"
)

// Evidence is one of the two attempts a verdict rests on.
type Evidence struct {
	Attempt   int
	Outcome   Outcome
	ExitCodes []*int
	Placement schema.Placement
}

// Verdict is the outcome of a confirmation: the failure and the run that
// confirmed it or not, and when it was given.
type Verdict struct {
	Kind          VerdictKind
	First, Second Evidence
	At            time.Time
}

// Confirmed is what Confirm decided: the decision to apply, and, when it
// starts a confirmation, the failure to confirm (Start), or, when it ends
// one, the verdict.
type Confirmed struct {
	Decision
	Start   *Evidence
	Verdict *Verdict
}

// ConfirmPolicy is the part of job_recovery that Confirm applies.
type ConfirmPolicy struct {
	// Runs is confirm_failures: 0 never confirms.
	Runs int
	// CountsAsRestart makes the confirmation run a restart on error.
	CountsAsRestart bool
}

// ConfirmPolicyFrom takes the confirmation policy out of a task's
// job_recovery.
func ConfirmPolicyFrom(r schema.JobRecovery) ConfirmPolicy {
	return ConfirmPolicy{Runs: max(r.ConfirmFailures, 0), CountsAsRestart: r.ConfirmCountsAsRestart}
}

// Confirm is Decide with failures confirmed before they become known
// failures. d is what Decide made of e, the attempt numbered attempt that
// ended with the counters c it was given; pending is the failure a running
// confirmation is about (nil when none is); next is where a confirmation
// run would go first (nil when the task allows no other placement than
// the one that failed). Rules, first match wins:
//
//  1. no confirmation asked (Runs 0): d as it is.
//  2. a confirmation is pending and e is a failure or a success of the
//     code: the verdict. The same outcome and the same exit codes on every
//     node (all known) is deterministic: Fail with FAILED or FAILED_SETUP,
//     counters c, "deterministic: exit 3 twice (local/local-a, then
//     local/local-b)". Anything else is flaky: d, its reason led by
//     "flaky: exit 3 then 0; ".
//  3. a confirmation is pending and e is anything else (a preemption, a
//     lost node, a cancel): d; the confirmation goes on with the attempt
//     that recovers, or ends without a verdict with the job.
//  4. a failure on the budgeted path (rule 4 of Decide) that d ends the
//     job with, when the run does not count as a restart: Recover on
//     another placement with d's counters (the run is not a restart on
//     error), "confirming failure: exit code 3; run again on local/local-b".
//  5. the same failure that d restarts, when the run counts as a restart
//     (CountsAsRestart): Recover on another placement, as the restart d
//     counted; a failure with no restart left ends the job unconfirmed.
//
// A confirmation is only started once per failure: a listed exit code, an
// escalation or a failure while one is pending never starts one.
func Confirm(p ConfirmPolicy, c Counters, e Ended, attempt int, d Decision, pending *Evidence, next *schema.Placement, now time.Time) Confirmed {
	if p.Runs <= 0 {
		return Confirmed{Decision: d}
	}
	failure := e.Outcome == UserFailure || e.Outcome == SetupFailure
	this := Evidence{Attempt: attempt, Outcome: e.Outcome, ExitCodes: slices.Clone(e.ExitCodes), Placement: e.Placement}
	if pending != nil {
		if !failure && e.Outcome != Succeeded {
			return Confirmed{Decision: d}
		}
		v := &Verdict{Kind: Flaky, First: *pending, Second: this, At: now}
		if failure && e.Outcome == pending.Outcome && sameCodes(e.ExitCodes, pending.ExitCodes) {
			v.Kind = Deterministic
			status := lifecycle.Failed
			if e.Outcome == SetupFailure {
				status = lifecycle.FailedSetup
			}
			return Confirmed{Verdict: v, Decision: Decision{Action: Fail, Counters: c, Status: status, Rule: RuleDeterministic,
				Reason: fmt.Sprintf("deterministic: %s twice (%s, then %s)", shortCodes(e.ExitCodes, e.Outcome), where(pending.Placement), where(e.Placement))}}
		}
		first, second := shortCodes(pending.ExitCodes, pending.Outcome), shortCodes(e.ExitCodes, e.Outcome)
		if strings.HasPrefix(first, "exit ") {
			second = strings.TrimPrefix(second, "exit ")
		}
		d.Rule = RuleFlaky
		d.Reason = fmt.Sprintf("flaky: %s then %s; %s", first, second, d.Reason)
		return Confirmed{Decision: d, Verdict: v}
	}
	if !failure || (d.Rule != RuleNoRestartsLeft && d.Rule != RuleRestartOnError) {
		return Confirmed{Decision: d}
	}
	if p.CountsAsRestart != (d.Action == Restart) {
		return Confirmed{Decision: d}
	}
	what := withDetail(describeExitCodes(e.ExitCodes, e.Outcome == SetupFailure), e.Detail)
	if p.CountsAsRestart {
		what = fmt.Sprintf("%s (restart %d on errors)", what, d.Counters.RestartsOnErrors)
	}
	again := "run again on " + where(e.Placement) + " (no other placement is allowed)"
	if next != nil && !samePlace(*next, e.Placement) {
		again = "run again on " + where(*next)
	}
	return Confirmed{Start: &this, Decision: Decision{Action: Recover, Counters: d.Counters, Rule: RuleConfirming,
		Reason: fmt.Sprintf("confirming failure: %s in %s; %s", what, where(e.Placement), again)}}
}

// ConfirmOrder orders the candidates of a confirmation run: every
// placement other than failed (another zone, region or cloud) first, in candidate order, then failed itself, so that a task
// allowed nowhere else still runs again.
func ConfirmOrder(cands []Candidate, failed schema.Placement) []Candidate {
	var other, same []Candidate
	for _, c := range cands {
		if samePlace(c.Placement, failed) {
			same = append(same, c)
		} else {
			other = append(other, c)
		}
	}
	return append(other, same...)
}

// samePlace says whether a and b are the same placement: cloud
// (case-insensitively), region and zone.
func samePlace(a, b schema.Placement) bool {
	return strings.EqualFold(a.Cloud, b.Cloud) && a.Region == b.Region && a.Zone == b.Zone
}

// sameCodes says whether two attempts' exit codes are the same on every
// node, each known.
func sameCodes(a, b []*int) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if a[i] == nil || b[i] == nil || *a[i] != *b[i] {
			return false
		}
	}
	return true
}

// shortCodes says how an attempt ended in a verdict: "exit 3", "exit 0,1"
// for several nodes, "setup exit 1", "exit ?" when no code is known.
func shortCodes(codes []*int, o Outcome) string {
	s := "exit ?"
	switch {
	case len(codes) == 1 && codes[0] != nil:
		s = "exit " + strconv.Itoa(*codes[0])
	case len(codes) > 1:
		s = "exit " + FormatExitCodes(codes)
	case o == Succeeded:
		s = "exit 0"
	}
	if o == SetupFailure {
		s = "setup " + s
	}
	return s
}
