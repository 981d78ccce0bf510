package controller

import (
	"context"
	"fmt"
	"slices"

	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
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
}

// observe checks a running attempt: the provider's view of its nodes first
// (a node the cloud took away ends the attempt whatever its processes say),
// then each node's wrapper for exit codes.
func (c *Controller) observe(ctx context.Context, j *store.Job, p *schema.Pipeline, a *store.Attempt, snap snapshot) error {
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
		r, err := c.runner(ctx, prov, cl, rank, a)
		if err == nil {
			sts[rank], err = node.Poll(ctx, r)
			r.Close()
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
	for _, n := range cl.Nodes {
		switch n.State {
		case provision.NodePreempted, provision.NodeStopped:
			return ended{outcome: strategy.Preempted, detail: n.Reason,
				reason: fmt.Sprintf("node %d %s in %s", n.Rank, n.State, attemptPlacement(a))}, true
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

// judge ends the attempt once every node has an exit code. When one node
// failed, the others are stopped so the attempt does not wait for them.
func (c *Controller) judge(ctx context.Context, j *store.Job, a *store.Attempt, prov provision.Provider, cl *provision.Cluster, sts []node.Status) error {
	codes := make([]*int, len(sts))
	done, failed := true, false
	for rank, st := range sts {
		switch {
		case st.Done && st.Stopped:
			// sortie stopped this node after another failed: its 143 or 137
			// is not the task's, so it neither matches recover_on_exit_codes
			// nor makes a setup failure.
		case st.Done:
			code := st.ExitCode
			codes[rank] = &code
			failed = failed || code != 0
		case !st.WrapperAlive:
			if e, ok := c.preemptedSince(ctx, prov, a); ok {
				return c.endAttempt(ctx, j, a, e)
			}
			if a.Unreachable == 0 {
				// Seen once, it may be a wrapper a restarted controller
				// caught between its start marker and its pid: look again.
				return c.Store.SetUnreachable(ctx, a, 1, fmt.Sprintf("the task's wrapper on node %d is not running and left no exit code; checking again", rank))
			}
			return c.endAttempt(ctx, j, a, ended{outcome: strategy.NodeLost, codes: codes,
				reason: fmt.Sprintf("the task's wrapper on node %d died without an exit code", rank)})
		default:
			done = false
		}
	}
	if done && failed {
		// A spot interruption kills the task before the cloud reports the
		// node gone: ask the cloud again before calling it the user's failure.
		if e, ok := c.preemptedSince(ctx, prov, a); ok {
			e.codes = codes
			return c.endAttempt(ctx, j, a, e)
		}
	}
	if !done {
		if failed {
			for rank, st := range sts {
				if !st.Done {
					c.stopNode(ctx, prov, cl, rank, a)
				}
			}
		}
		return nil
	}
	if !failed && slices.IndexFunc(codes, func(c *int) bool { return c != nil }) < 0 {
		return c.endAttempt(ctx, j, a, ended{outcome: strategy.NodeLost, codes: codes,
			reason: "every node was stopped before its task ended"})
	}
	e := ended{outcome: strategy.Succeeded, codes: codes, reason: "every node exited 0"}
	for rank, st := range sts {
		if st.ExitCode == 0 || st.Stopped {
			continue
		}
		if st.Phase == "setup" {
			e.outcome, e.reason = strategy.SetupFailure, fmt.Sprintf("setup on node %d exited %d", rank, st.ExitCode)
			break
		}
		if e.outcome == strategy.Succeeded {
			e.outcome, e.reason = strategy.UserFailure, fmt.Sprintf("node %d exited %d", rank, st.ExitCode)
		}
	}
	return c.endAttempt(ctx, j, a, e)
}

// unreachable counts a failed check of a node its provider says is running.
// Failing to reach a node is not a failure of the job: only after
// unreachable_checks checks in a row does the attempt count as node_lost.
func (c *Controller) unreachable(ctx context.Context, j *store.Job, a *store.Attempt, rank int, cause error) error {
	n := a.Unreachable + 1
	limit := c.Config.Controller.UnreachableChecks
	if n >= limit {
		return c.endAttempt(ctx, j, a, ended{outcome: strategy.NodeLost,
			reason: fmt.Sprintf("node %d unreachable for %d checks: %v", rank, n, cause)})
	}
	return c.Store.SetUnreachable(ctx, a, n, fmt.Sprintf("cannot reach node %d (check %d/%d): %v", rank, n, limit, cause))
}
