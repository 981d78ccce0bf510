package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/provision/node/notice"
	"sortie/schema"
	"sortie/strategy"
)

// ended is how an attempt ended, as observed.
type ended struct {
	outcome strategy.Outcome
	codes   []*int
	reason  string // why the attempt ended, stored with it
	detail  string // what strategy.Decide folds into its reason
	// prechecks: a launch_failed that no retry can fix.
	prechecks bool
	// by is who asked for a cancel.
	by string
	// seen is when the controller saw the attempt end (endAttempt sets
	// it), for the decision latency; zero for ends it caused itself.
	seen time.Time
}

// observe checks a running attempt: the provider's view of its nodes first
// (a node the cloud took away ends the attempt whatever its processes say),
// then each node's agent for exit codes.
func (c *jobStep) observe(ctx context.Context, j *store.Job, p *schema.Pipeline, a *store.Attempt, snap snapshot) error {
	if _, failed := snap.failed[a.Cloud]; failed {
		return nil // the cloud did not answer this tick: state unknown, not gone
	}
	cl, ok := snap.clusters[a.Cluster]
	if !ok {
		return c.endAttempt(ctx, j, a, ended{outcome: strategy.NodeLost, reason: fmt.Sprintf("cluster %s is gone", a.Cluster)})
	}
	if e, ok := cloudEnded(cl, a); ok {
		return c.endAttempt(ctx, j, a, e)
	}
	prov, err := c.Providers.Provider(ctx, a.Cloud)
	if err != nil {
		return err
	}
	sts := make([]node.Status, len(cl.Nodes))
	for rank := range cl.Nodes {
		nt, err := c.nodeTask(ctx, prov, cl, rank, a)
		if err == nil {
			sts[rank], err = nt.Poll(ctx)
			nt.Close()
		}
		if err != nil {
			return c.unreachable(ctx, j, a, rank, err)
		}
	}
	if a.Unreachable > 0 {
		if err := c.Store.SetUnreachable(ctx, a, 0, ""); err != nil {
			return fmt.Errorf("record the nodes reachable again: %w", err)
		}
	}
	return c.judge(ctx, j, a, prov, cl, sts)
}

// cloudEnded says whether the cloud has taken a node of cl away.
func cloudEnded(cl *provision.Cluster, a *store.Attempt) (ended, bool) {
	if cl.Broken != "" {
		// The provider cannot read back its own record of the cluster: no
		// retry will tell what became of the task.
		return ended{outcome: strategy.ControllerError, reason: "controller error: " + cl.Broken, detail: cl.Broken}, true
	}
	for _, n := range cl.Nodes {
		switch n.State {
		case provision.NodePreempted:
			return ended{outcome: strategy.Preempted, detail: n.Reason,
				reason: fmt.Sprintf("node %d %s in %s", n.Rank, n.State, attemptPlacement(a))}, true
		case provision.NodeStopped:
			// Only the cloud's own reasons are a preemption; a stop by
			// anyone else (a user's, of an on-demand VM too) loses the node.
			return ended{outcome: strategy.NodeLost, detail: n.Reason,
				reason: fmt.Sprintf("node %d was stopped in %s", n.Rank, attemptPlacement(a))}, true
		case provision.NodeGone, provision.NodeTerminated:
			return ended{outcome: strategy.NodeLost, detail: n.Reason,
				reason: fmt.Sprintf("node %d is gone from %s", n.Rank, attemptPlacement(a))}, true
		}
	}
	return ended{}, false
}

// preemptedSince asks the provider afresh whether a's cluster lost a node
// after this tick's snapshot was taken.
func (c *Controller) preemptedSince(ctx context.Context, prov provision.Provider, a *store.Attempt) (ended, bool) {
	got, err := prov.Status(ctx, []string{a.Cluster})
	if err != nil {
		return ended{}, false
	}
	cl, ok := got[a.Cluster]
	if !ok {
		return ended{outcome: strategy.NodeLost, reason: fmt.Sprintf("cluster %s is gone", a.Cluster)}, true
	}
	return cloudEnded(cl, a)
}

// judge ends the attempt when its outcome is known: at the first failed
// node (the others are stopped once the end is recorded, so their codes
// are unknown), when an agent died without an exit code, or when every
// node has ended.
func (c *jobStep) judge(ctx context.Context, j *store.Job, a *store.Attempt, prov provision.Provider, cl *provision.Cluster, sts []node.Status) error {
	c.recordStorage(ctx, a, sts)
	c.recordProgress(ctx, a, sts)
	// A notice first: the replacement begins now, before the node goes.
	rank, n, ok := nodeNotice(sts)
	if !ok && noticeEnds(a.Notice) {
		// Given to the node but not yet heard there (local): the store
		// has it already.
		rank, n, ok = -1, notice.Notice{Kind: a.Notice.Kind, Source: a.Notice.Source, At: a.Notice.At}, true
	}
	if ok {
		replaced, err := c.heard(ctx, j, a, rank, n, endedOnItsOwn(sts))
		if err != nil || replaced {
			return err
		}
	}
	codes := make([]*int, len(sts))
	running, failed, dead := false, false, -1
	for rank, st := range sts {
		switch {
		case st.Done && st.Stopped:
			// sortie stopped this node after another failed: its 143 or 137
			// is not the task's, so it neither matches recover_on_exit_codes
			// nor makes a setup failure.
		case st.Done && st.Invalid != "":
			// The task wrote over its exit code: no code is known, and a
			// task that did so did not succeed.
			failed = true
		case st.Done:
			code := st.ExitCode
			codes[rank] = &code
			failed = failed || code != 0
		case !st.AgentAlive:
			if dead < 0 {
				dead = rank
			}
		default:
			running = true
		}
	}
	if failed || dead >= 0 {
		// A spot interruption kills the task, or the node, before the
		// cloud reports it gone: ask the cloud again before calling it the
		// task's failure.
		if e, ok := c.preemptedSince(ctx, prov, a); ok {
			e.codes = codes
			return c.endAttempt(ctx, j, a, e)
		}
	}
	if failed {
		return c.endAttempt(ctx, j, a, failure(sts, codes))
	}
	if dead >= 0 {
		if a.Unreachable == 0 {
			// Seen once, it may be an agent a restarted controller
			// caught between its start marker and its pid: look again.
			return c.Store.SetUnreachable(ctx, a, 1, fmt.Sprintf("the node agent on node %d is not running and left no exit code; checking again", dead))
		}
		// The node runs but its agent is gone without a code (killed,
		// crashed, or its disk full): the task's code is unknown, which is
		// a failure within the restart budget, never a free recovery. The
		// task's processes, if any are left, are stopped with the attempt.
		why := fmt.Sprintf("the node agent on node %d died without an exit code", dead)
		if sts[dead].AgentLost {
			why = fmt.Sprintf("the node agent on node %d died without an exit code (killed, crashed, or it could not write one); the task's code is unknown", dead)
		}
		e := ended{outcome: strategy.UserFailure, codes: codes, reason: why, detail: why}
		if sts[dead].Phase == node.PhaseSetup {
			e.outcome = strategy.SetupFailure
		}
		return c.endAttempt(ctx, j, a, e)
	}
	if running {
		if a.RunAt == nil && slices.IndexFunc(sts, func(st node.Status) bool { return st.Phase != node.PhaseRun }) < 0 {
			// Setup is over on every node: a follow says the run began.
			if err := c.Store.MarkRunStarted(ctx, a.ID); err != nil {
				return fmt.Errorf("record the run started: %w", err)
			}
			now := c.Now()
			a.RunAt = &now
		}
		return nil
	}
	if slices.IndexFunc(codes, func(c *int) bool { return c != nil }) < 0 {
		return c.endAttempt(ctx, j, a, ended{outcome: strategy.NodeLost, codes: codes,
			reason: "every node was stopped before its task ended"})
	}
	return c.endAttempt(ctx, j, a, ended{outcome: strategy.Succeeded, codes: codes, reason: "every node exited 0"})
}

// failure is how an attempt with a failed node ended: a setup failure when
// a node's setup failed, else the run's failure of the first failed node.
func failure(sts []node.Status, codes []*int) ended {
	e := ended{codes: codes}
	for rank, st := range sts {
		if st.Done && st.Invalid != "" && !st.Stopped {
			if e.outcome == "" {
				e.outcome, e.reason = strategy.UserFailure, fmt.Sprintf("node %d left no valid exit code: %s", rank, st.Invalid)
			}
			continue
		}
		if !st.Done || st.Stopped || st.ExitCode == 0 {
			continue
		}
		unwritten := ""
		if st.Unwritten {
			unwritten = " (its exit code file could not be written: is the node's disk full?)"
		}
		if st.Phase == node.PhaseSetup {
			e.outcome, e.reason = strategy.SetupFailure, fmt.Sprintf("setup on node %d exited %d%s", rank, st.ExitCode, unwritten)
			break
		}
		if e.outcome == "" {
			e.outcome, e.reason = strategy.UserFailure, fmt.Sprintf("node %d exited %d%s", rank, st.ExitCode, unwritten)
		}
	}
	return e
}

// unreachable counts a failed check of a node its provider says is running.
// Failing to reach a node is not a failure of the job: only after
// unreachable_checks checks in a row does the attempt count as node_lost.
func (c *jobStep) unreachable(ctx context.Context, j *store.Job, a *store.Attempt, rank int, cause error) error {
	n := a.Unreachable + 1
	limit := c.Config.Controller.UnreachableChecks
	if n >= limit {
		return c.endAttempt(ctx, j, a, ended{outcome: strategy.NodeLost,
			reason: fmt.Sprintf("node %d unreachable for %d checks: %v", rank, n, cause)})
	}
	return c.Store.SetUnreachable(ctx, a, n, fmt.Sprintf("cannot reach node %d (check %d/%d): %v", rank, n, limit, cause))
}
