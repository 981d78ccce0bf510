// Package strategy holds sortie's recovery decisions as pure functions: what
// to do after an attempt ends (Decide), how long to wait before the next try
// (Backoff), and where to launch next (Candidates, Order). Nothing here does
// I/O or reads the clock; the controller passes in what it observed and
// applies what comes back, so every rule is testable as a table.
//
// It must not import sortie/controller, controller/store, controller/service,
// controller/clouds/..., sortie/provision/... or sortie/cmd/...: decisions are
// pure functions of what the controller observed.
package strategy

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"sortie/controller/lifecycle"
	"sortie/schema"
)

// Outcome is the class of an ended attempt, as stored in the attempt row.
type Outcome string

const (
	Succeeded    Outcome = "succeeded"
	UserFailure  Outcome = "user_failure"  // the run step exited non-zero
	SetupFailure Outcome = "setup_failure" // the setup step exited non-zero
	Preempted    Outcome = "preempted"     // the cloud took a node away
	NodeLost     Outcome = "node_lost"     // the cloud says a node is gone
	LaunchFailed Outcome = "launch_failed" // no placement could be launched, or the request cannot be met
	Cancelled    Outcome = "cancelled"     // the user cancelled the job
	// ControllerError: sortie itself could not go on with the attempt (a
	// stored spec it cannot read). Never the user's fault, never silent.
	ControllerError Outcome = "controller_error"
	// TimedOut: the job's max_duration ran out; sortie stopped the attempt.
	TimedOut Outcome = "timed_out"
	// BudgetSpent: the job's max_cost was spent, or too little of it was
	// left for the next attempt (OverBudget); sortie stopped the attempt.
	BudgetSpent Outcome = "over_budget"
	// PreemptedByPriority: sortie stopped the attempt to give its place
	// under a limit to a waiting job of higher priority (preempt.go);
	// the job waits to be admitted again.
	PreemptedByPriority Outcome = "preempted_by_priority"
)

// Action is what the controller does next.
type Action string

const (
	// Recover launches a new cluster at a placement chosen by Order.
	Recover Action = "recover"
	// Restart runs the task again, on the same cluster when it is healthy.
	Restart Action = "restart"
	// Escalate runs the task again on a new, bigger cluster: the old one
	// is torn down, and the next attempt asks for Decision.Size.
	Escalate Action = "escalate"
	// NextTask starts the pipeline's next task.
	NextTask Action = "next_task"
	// Succeed, Fail and Cancel end the job with Decision.Status.
	Succeed Action = "succeed"
	Fail    Action = "fail"
	Cancel  Action = "cancel"
	// Requeue sends the job back to wait for admission, PENDING, its
	// counters untouched: it was preempted by a job of higher priority.
	Requeue Action = "requeue"
)

// Rule names which rule made a decision: a stable, machine-readable companion
// to the human Reason, for tests, metrics and `jobs show -o json`.
type Rule string

const (
	RulePreempted       Rule = "Preempted"
	RuleNodeLost        Rule = "NodeLost"
	RuleNoRecovery      Rule = "NoRecovery"
	RuleNoRecoveryLeft  Rule = "NoRecoveryLeft"
	RuleMaxDuration     Rule = "MaxDuration"
	RuleMaxCost         Rule = "MaxCost"
	RuleExitCodeMatched Rule = "ExitCodeMatched"
	RuleRestartOnError  Rule = "RestartOnError"
	RuleNoRestartsLeft  Rule = "NoRestartsLeft"
	RuleEscalated       Rule = "Escalated"
	RuleNothingBigger   Rule = "NothingBigger"
	RuleTaskSucceeded   Rule = "TaskSucceeded"
	RuleJobSucceeded    Rule = "JobSucceeded"
	RuleCancelled       Rule = "Cancelled"
	RuleLaunchFailed    Rule = "LaunchFailed"
	RulePrechecks       Rule = "Prechecks"
	RuleControllerError Rule = "ControllerError"
	RuleUnknownOutcome  Rule = "UnknownOutcome"
	RuleCrashLoop       Rule = "CrashLoop"
	// RulePreemptedByPriority requeues a job stopped for a waiting job of
	// higher priority.
	RulePreemptedByPriority Rule = "PreemptedByPriority"
	// RuleOnDemandAfter and RuleOnDemandAfterCost recover from a spot
	// preemption on-demand (Decision.OnDemand), after
	// job_recovery.on_demand_after preemptions or once they cost more
	// than on-demand would have (on_demand_after_cost).
	RuleOnDemandAfter     Rule = "OnDemandAfter"
	RuleOnDemandAfterCost Rule = "OnDemandAfterCost"
)

// Reason texts. They are shown to users and matched by scripts, so they only
// change on purpose.
const (
	reasonPreempted      = "preemption in %s"
	reasonNodeLost       = "node lost in %s"
	reasonMatched        = "%s matched recover_on_exit_codes %s"
	reasonRestart        = "%s; restart %d/%d on errors"
	reasonNoRestartsLeft = "%s; no restarts left (max_restarts_on_errors %d)"
	reasonTaskSucceeded  = "task succeeded; starting the next task"
	reasonJobSucceeded   = "succeeded"
	reasonCancelled      = "cancelled by user"
	reasonLaunchFailed   = "launch failed"
	reasonPrechecks      = "the request cannot be launched"
	reasonController     = "controller error"
	reasonUnknownOutcome = "attempt ended with unknown outcome %q"
	reasonNoRecovery     = "%s; job_recovery is NONE, not recovering"
	reasonNoRecoveryLeft = "%s; no recoveries left (max_recoveries %d)"
	reasonMaxDuration    = "max_duration %s exceeded"
	reasonEscalated      = "%s: %s; restart %d/%d on errors"
	reasonNothingBigger  = "%s matched escalate.on_exit_codes %s, but nothing bigger is left (%s)"
	reasonNoEscalation   = "%s (would escalate: %s); no restarts left (max_restarts_on_errors %d)"
	reasonCrashLoop      = "crash loop: %s without progress (%s)"

	reasonPreemptedByPriority = "preempted by a job of higher priority; waiting to start again"
)

// Policy is the part of resources.job_recovery that Decide applies.
type Policy struct {
	// MaxRestartsOnErrors is how many failures with unlisted (or unknown)
	// exit codes restart the task. Zero means none do: the first such failure
	// ends the job. Negative values are treated as zero.
	MaxRestartsOnErrors int
	// RecoverOnExitCodes restart the task, without limit and without touching
	// the budget above, when any node exits with one of them. Empty means
	// no code is special.
	RecoverOnExitCodes []int
	// NoRecovery ends the job FAILED at the first preemption or lost node
	// instead of recovering (strategy NONE). Restarts on exit codes and
	// within MaxRestartsOnErrors still apply: they are asked for by name.
	NoRecovery bool
	// MaxRecoveries is how many preemptions or lost nodes the task recovers
	// from; the next one ends the job FAILED. Zero means no limit.
	MaxRecoveries int
	// MaxDuration is the job's wall-clock limit, counted from its
	// submission (see OverTime). Zero means none.
	MaxDuration time.Duration
	// MaxCost is the most the job may cost in dollars, through every
	// attempt (see OverBudget). Zero means no limit.
	MaxCost float64
	// Escalate, when set, restarts the task on a bigger instance after a
	// failure with one of its exit codes, as a restart on error.
	Escalate *schema.Escalate
	// MaxRestartsWithoutProgress, when set, is how many restarts and
	// recoveries in a row the task may make without reporting progress
	// (see Progress); the next one ends the job FAILED. nil means no
	// limit.
	MaxRestartsWithoutProgress *int
	// OnDemandAfter, when above zero, recovers a spot task on-demand at
	// its OnDemandAfter-th preemption (see OnDemand).
	OnDemandAfter int
	// OnDemandAfterCost recovers a spot task on-demand once its preempted
	// attempts cost more than on-demand would have (see OnDemand).
	OnDemandAfterCost bool
}

// PolicyFrom takes the decision policy out of a task's job_recovery.
func PolicyFrom(r schema.JobRecovery) Policy {
	return Policy{
		MaxRestartsOnErrors:        max(r.MaxRestartsOnErrors, 0),
		RecoverOnExitCodes:         slices.Clone(r.RecoverOnExitCodes),
		NoRecovery:                 r.Strategy == schema.NoRecovery,
		MaxRecoveries:              max(deref(r.MaxRecoveries), 0),
		MaxDuration:                max(r.MaxDuration.D(), 0),
		MaxCost:                    max(r.MaxCost, 0),
		Escalate:                   r.Escalate,
		MaxRestartsWithoutProgress: nonNegative(r.MaxRestartsWithoutProgress),
		OnDemandAfter:              max(r.OnDemandAfter, 0),
		OnDemandAfterCost:          r.OnDemandAfterCost,
	}
}

// nonNegative is a copy of *n, negative values as zero; nil stays nil.
func nonNegative(n *int) *int {
	if n == nil {
		return nil
	}
	v := max(*n, 0)
	return &v
}

func deref(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}

// OverTime is the max_duration rule: a job submitted at submitted is over
// its limit at now once MaxDuration has passed, whatever it is doing then
// (running, launching, backing off). The count starts at submission, not at
// the first start, so the time spent waiting for capacity counts too: the
// limit is on when the user gets an answer, as a deadline is. The reason is
// what the job ends with.
func OverTime(p Policy, submitted, now time.Time) (reason string, over bool) {
	if p.MaxDuration <= 0 || now.Sub(submitted) < p.MaxDuration {
		return "", false
	}
	return fmt.Sprintf(reasonMaxDuration, schema.Duration(p.MaxDuration)), true
}

// Counters are a task's recovery counters. The controller persists them with
// each decision so a controller restart does not reset a budget.
type Counters struct {
	// RecoveryCount counts recoveries from preemption or node loss and
	// restarts on a listed exit code.
	RecoveryCount int
	// LossRecoveries counts, among RecoveryCount, the recoveries from
	// preemption or node loss alone: what max_recoveries limits.
	LossRecoveries int
	// RestartsOnErrors counts failures that took the budgeted path, including
	// the one that ended the job: a job with max_restarts_on_errors 2 that
	// fails for good ends with 3.
	RestartsOnErrors int
	// Progress is the progress accounting of the task's earlier attempts
	// (ProgressOf): what max_restarts_without_progress limits.
	Progress ProgressState
	// Preemptions counts the task's spot attempts that were preempted
	// before the one that just ended: what on_demand_after counts. The
	// controller reads it from the attempts; it is only needed when the
	// policy switches to on-demand.
	Preemptions int
}

// Retries is the back-off step for the wait before the restart or recovery a
// decision asks for: pass it to Backoff.Delay with the decision's Counters.
// It is 1 for the first restart or recovery of a task and grows with both
// kinds, so a task that alternates preemptions and failures still slows down.
func (c Counters) Retries() int { return c.RecoveryCount + c.RestartsOnErrors }

// Ended is what the controller observed about the attempt that just ended.
type Ended struct {
	Outcome Outcome
	// ExitCodes has one entry per node in rank order; nil means that node's
	// code is unknown.
	ExitCodes []*int
	// Placement is where the attempt ran.
	Placement schema.Placement
	// Detail is an optional provider- or controller-given detail
	// ("Server.SpotInstanceTermination"), folded into the reason. For
	// launch_failed it is the whole reason: what failed, and where.
	Detail string
	// Prechecks marks a launch_failed attempt whose launch failed in a way
	// no retry can fix (no credentials, an infeasible request, an input
	// gone since the launch): the job ends FAILED_PRECHECKS rather than
	// FAILED_NO_RESOURCE.
	Prechecks bool
	// Size is what the attempt asked for in the dimensions the policy
	// escalates (SizeOf the task's resources, or the size an earlier
	// escalation chose).
	Size Size
	// By is who asked for a cancel, named in its reason ("cancelled by
	// alice"); "" is a user not named.
	By string
	// Attempt is the attempt's number within its task (1 for the first).
	Attempt int
	// Progress is the highest progress the attempt's nodes reported; nil
	// when none did.
	Progress *int64
	// OnDemand says the attempt was launched on-demand: a task already
	// switched (Decision.OnDemand), or one that never asked for spot. Its
	// preemptions never switch it again.
	OnDemand bool
	// Lost is what the task's preempted spot attempts cost, this one
	// included, and what on-demand would have: what on_demand_after_cost
	// compares. nil when a price is not known.
	Lost *LostCost
	// Checkpoint is the newest object of the task's MOUNT_CACHED buckets
	// when the attempt ended, nil when none was seen; Started is when the
	// attempt began (see Progress).
	Checkpoint *Checkpoint
	Started    time.Time
}

// Decision is what to do after an attempt, and why.
type Decision struct {
	Action Action
	// Counters are the task's counters after this decision; persist them.
	Counters Counters
	// Status is the job's final status when Action is Succeed, Fail or
	// Cancel, and "" otherwise.
	Status lifecycle.Status
	// Rule names the rule that matched.
	Rule Rule
	// Reason is shown to the user and stored with the attempt.
	Reason string
	// Size is the size of the next attempt when Action is Escalate; nil
	// otherwise (the next attempt asks for what this one did).
	Size *Size
	// OnDemand, with Action Recover, launches the next attempt, and every
	// later one of the task, on-demand instead of spot.
	OnDemand bool
}

// Decide applies the recovery rules, first match wins:
//
//  1. preempted or node_lost: Recover on a new cluster; RecoveryCount+1
//     and LossRecoveries+1. With NoRecovery, or once LossRecoveries has
//     reached MaxRecoveries, Fail with FAILED instead.
//     1b. a Recover from a preemption of a spot attempt (not
//     Ended.OnDemand) recovers on-demand (Decision.OnDemand) when this
//     preemption is the OnDemandAfter-th of the task's spot attempts
//     (RuleOnDemandAfter), or, with OnDemandAfterCost, when Ended.Lost
//     says the preempted attempts cost more than on-demand would have
//     (RuleOnDemandAfterCost); see onDemand. A lost node never switches:
//     it says nothing of spot.
//  2. user or setup failure where any node's known exit code is listed in
//     Escalate.OnExitCodes: RestartsOnErrors+1; Escalate to the size Grow
//     gives while RestartsOnErrors <= MaxRestartsOnErrors, else Fail with
//     FAILED or FAILED_SETUP; Fail too when nothing can grow (every
//     dimension at its cap or last rung). A code listed here and in
//     RecoverOnExitCodes escalates: this rule comes first.
//  3. user or setup failure where any node's known exit code is listed in
//     RecoverOnExitCodes: Restart; RecoveryCount+1; the budget is untouched
//     and there is no limit (the back-off keeps it from spinning hot).
//  4. any other user or setup failure, including no exit code known:
//     RestartsOnErrors+1; Restart while it is <= MaxRestartsOnErrors, else
//     Fail with FAILED or FAILED_SETUP.
//  5. succeeded: NextTask, or Succeed when it was the last task.
//  6. cancelled: Cancel with CANCELLED, "cancelled by user".
//  7. launch_failed with Ended.Prechecks: Fail with FAILED_PRECHECKS at
//     once, since no retry can fix it.
//  8. launch_failed: Fail with FAILED_NO_RESOURCE. The placement logic
//     (Order, NoResourceReason) has already spent every round of launch
//     tries by the time an attempt ends this way.
//     For both, Detail is the reason (NoResourceReason's text, the
//     provider's error); without one it is "launch failed" or "the request
//     cannot be launched".
//  9. controller_error: Fail with FAILED_CONTROLLER, "controller error: "
//     and Detail, the error that stopped the controller.
//  10. timed_out (OverTime said so): Fail with FAILED and Detail, OverTime's
//     reason; never recovered.
//  11. over_budget (OverBudget said so): Fail with FAILED and Detail,
//     OverBudget's reason; never recovered.
//  12. preempted_by_priority: Requeue, the job waits for admission again;
//     Detail is the reason (who took its place). No counter moves: it
//     spends neither max_restarts_on_errors nor max_recoveries.
//  13. crash loop, with MaxRestartsWithoutProgress set: a Recover, Restart
//     or Escalate from rules 1 to 4 after an attempt that made no progress
//     (see Progress) is one more restart without progress; past the limit
//     it becomes Fail with FAILED, "crash loop: N restarts without
//     progress (last progress P at attempt A)", and the counters stay as
//     they were. An attempt that made progress starts the count again.
//
// An outcome outside these ends the job FAILED_CONTROLLER too, never
// silently. Every ending of a job goes through Decide, so each of these
// texts is the one users see in `jobs show`.
func Decide(p Policy, c Counters, e Ended, lastTask bool) Decision {
	d := decide(p, c, e, lastTask)
	switch d.Action {
	case Recover, Restart, Escalate:
		return crashLoop(p, c, e, d)
	}
	return d
}

func decide(p Policy, c Counters, e Ended, lastTask bool) Decision {
	switch e.Outcome {
	case Preempted:
		return onDemand(p, e, decideLoss(p, c, RulePreempted, withDetail(fmt.Sprintf(reasonPreempted, where(e.Placement)), e.Detail)))
	case NodeLost:
		return decideLoss(p, c, RuleNodeLost, withDetail(fmt.Sprintf(reasonNodeLost, where(e.Placement)), e.Detail))
	case TimedOut:
		return Decision{Action: Fail, Counters: c, Status: lifecycle.Failed, Rule: RuleMaxDuration,
			Reason: cmp.Or(e.Detail, "max_duration exceeded")}
	case BudgetSpent:
		return Decision{Action: Fail, Counters: c, Status: lifecycle.Failed, Rule: RuleMaxCost,
			Reason: cmp.Or(e.Detail, "max_cost spent")}
	case UserFailure, SetupFailure:
		return decideFailure(p, c, e)
	case Succeeded:
		if lastTask {
			return Decision{Action: Succeed, Counters: c, Status: lifecycle.Succeeded,
				Rule: RuleJobSucceeded, Reason: withDetail(reasonJobSucceeded, e.Detail)}
		}
		return Decision{Action: NextTask, Counters: c, Rule: RuleTaskSucceeded,
			Reason: withDetail(reasonTaskSucceeded, e.Detail)}
	case Cancelled:
		return Decision{Action: Cancel, Counters: c, Status: lifecycle.Cancelled,
			Rule: RuleCancelled, Reason: withDetail(cancelledBy(e.By), e.Detail)}
	case LaunchFailed:
		if e.Prechecks {
			return Decision{Action: Fail, Counters: c, Status: lifecycle.FailedPrechecks,
				Rule: RulePrechecks, Reason: cmp.Or(e.Detail, reasonPrechecks)}
		}
		return Decision{Action: Fail, Counters: c, Status: lifecycle.FailedNoResource,
			Rule: RuleLaunchFailed, Reason: cmp.Or(e.Detail, reasonLaunchFailed)}
	case PreemptedByPriority:
		return Decision{Action: Requeue, Counters: c, Rule: RulePreemptedByPriority,
			Reason: cmp.Or(e.Detail, reasonPreemptedByPriority)}
	case ControllerError:
		reason := reasonController
		if e.Detail != "" {
			reason += ": " + e.Detail
		}
		return Decision{Action: Fail, Counters: c, Status: lifecycle.FailedController,
			Rule: RuleControllerError, Reason: reason}
	default:
		return Decision{Action: Fail, Counters: c, Status: lifecycle.FailedController,
			Rule: RuleUnknownOutcome, Reason: withDetail(fmt.Sprintf(reasonUnknownOutcome, e.Outcome), e.Detail)}
	}
}

// decideLoss is rule 1: recover from a preemption or a lost node, unless
// the policy says never (NoRecovery) or the task has used up MaxRecoveries;
// then the job ends FAILED, and the counters stay as they were, since
// nothing was recovered.
func decideLoss(p Policy, c Counters, rule Rule, what string) Decision {
	switch {
	case p.NoRecovery:
		return Decision{Action: Fail, Counters: c, Status: lifecycle.Failed, Rule: RuleNoRecovery,
			Reason: fmt.Sprintf(reasonNoRecovery, what)}
	case p.MaxRecoveries > 0 && c.LossRecoveries >= p.MaxRecoveries:
		return Decision{Action: Fail, Counters: c, Status: lifecycle.Failed, Rule: RuleNoRecoveryLeft,
			Reason: fmt.Sprintf(reasonNoRecoveryLeft, what, p.MaxRecoveries)}
	}
	c.RecoveryCount++
	c.LossRecoveries++
	return Decision{Action: Recover, Counters: c, Rule: rule, Reason: what}
}

// decideFailure is rules 2, 3 and 4.
func decideFailure(p Policy, c Counters, e Ended) Decision {
	setup := e.Outcome == SetupFailure
	if p.Escalate != nil {
		if rank, code, ok := matchedExitCode(e.ExitCodes, p.Escalate.OnExitCodes); ok {
			return decideEscalate(p, c, e, matchedWhat(e, rank, code))
		}
	}
	if rank, code, ok := matchedExitCode(e.ExitCodes, p.RecoverOnExitCodes); ok {
		c.RecoveryCount++
		what := matchedWhat(e, rank, code)
		return Decision{Action: Restart, Counters: c, Rule: RuleExitCodeMatched,
			Reason: fmt.Sprintf(reasonMatched, withDetail(what, e.Detail), formatCodes(p.RecoverOnExitCodes))}
	}

	c.RestartsOnErrors++
	what := withDetail(describeExitCodes(e.ExitCodes, setup), e.Detail)
	budget := max(p.MaxRestartsOnErrors, 0)
	if c.RestartsOnErrors <= budget {
		return Decision{Action: Restart, Counters: c, Rule: RuleRestartOnError,
			Reason: fmt.Sprintf(reasonRestart, what, c.RestartsOnErrors, budget)}
	}
	status := lifecycle.Failed
	if setup {
		status = lifecycle.FailedSetup
	}
	return Decision{Action: Fail, Counters: c, Status: status, Rule: RuleNoRestartsLeft,
		Reason: fmt.Sprintf(reasonNoRestartsLeft, what, budget)}
}

// decideEscalate is rule 2: a failure whose exit code says the task needs
// a bigger instance.
func decideEscalate(p Policy, c Counters, e Ended, what string) Decision {
	c.RestartsOnErrors++
	status := lifecycle.Failed
	if e.Outcome == SetupFailure {
		status = lifecycle.FailedSetup
	}
	what = withDetail(what, e.Detail)
	next, steps, top, ok := Grow(*p.Escalate, e.Size)
	if !ok {
		return Decision{Action: Fail, Counters: c, Status: status, Rule: RuleNothingBigger,
			Reason: fmt.Sprintf(reasonNothingBigger, what, formatCodes(p.Escalate.OnExitCodes), strings.Join(top, ", "))}
	}
	budget := max(p.MaxRestartsOnErrors, 0)
	if c.RestartsOnErrors > budget {
		return Decision{Action: Fail, Counters: c, Status: status, Rule: RuleNoRestartsLeft,
			Reason: fmt.Sprintf(reasonNoEscalation, what, strings.Join(steps, ", "), budget)}
	}
	return Decision{Action: Escalate, Counters: c, Rule: RuleEscalated, Size: &next,
		Reason: fmt.Sprintf(reasonEscalated, what, strings.Join(steps, ", "), c.RestartsOnErrors, budget)}
}

// matchedWhat names the exit code that matched a list: "exit code 137",
// "exit code 137 on node 1" in a cluster of several, "setup exit code 1".
func matchedWhat(e Ended, rank, code int) string {
	what := "exit code " + strconv.Itoa(code)
	if len(e.ExitCodes) > 1 {
		what += " on node " + strconv.Itoa(rank)
	}
	if e.Outcome == SetupFailure {
		what = "setup " + what
	}
	return what
}

// matchedExitCode returns the first node, in rank order, whose known exit
// code is listed.
func matchedExitCode(codes []*int, listed []int) (rank, code int, ok bool) {
	for i, c := range codes {
		if c != nil && slices.Contains(listed, *c) {
			return i, *c, true
		}
	}
	return 0, 0, false
}

// describeExitCodes says how an attempt failed: "exit code 1",
// "exit codes 0,?" for several nodes (? is unknown), or that none is known.
func describeExitCodes(codes []*int, setup bool) string {
	known := slices.IndexFunc(codes, func(c *int) bool { return c != nil }) >= 0
	var s string
	switch {
	case !known && setup:
		return "setup failed, no exit code known"
	case !known:
		return "failed, no exit code known"
	case len(codes) == 1:
		s = "exit code " + strconv.Itoa(*codes[0])
	default:
		s = "exit codes " + FormatExitCodes(codes)
	}
	if setup {
		s = "setup " + s
	}
	return s
}

// formatCodes writes a code list the way the user wrote it in YAML.
func formatCodes(codes []int) string {
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = strconv.Itoa(c)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// cancelledBy is the reason of a cancel asked by by ("" when no one is
// named).
func cancelledBy(by string) string {
	if by == "" {
		return reasonCancelled
	}
	return "cancelled by " + by
}

func withDetail(s, detail string) string {
	if detail == "" {
		return s
	}
	return s + " (" + detail + ")"
}

// where names a placement the way users read it in reasons: region/zone
// ("local/local-a", "us-east-1/us-east-1a"); region names already say which
// cloud they belong to, so the cloud is only shown when there is no region.
func where(p schema.Placement) string {
	switch {
	case p.Region == "" && p.Zone == "" && p.Cloud == "":
		return "an unknown placement"
	case p.Region == "" && p.Zone == "":
		return p.Cloud
	case p.Zone == "":
		return p.Region
	case p.Region == "":
		return p.Zone
	}
	return p.Region + "/" + p.Zone
}
