package controller

import (
	"context"
	"encoding/json"
	"errors"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy"
)

// endAttempt keeps the attempt's logs, asks the strategy what to do, and
// writes the outcome, exit codes and decision in one transaction; then tears
// the cluster down unless the task restarts on it.
func (c *Controller) endAttempt(ctx context.Context, j *store.Job, a *store.Attempt, e ended) error {
	p, err := spec(j)
	if err != nil {
		return err
	}
	task := p.Tasks[a.TaskIdx]
	tasks, err := c.Store.Tasks(ctx, j.ID)
	if err != nil {
		return err
	}
	t := tasks[a.TaskIdx]
	if e.outcome != strategy.Succeeded {
		// Stop what is left so no process outlives its attempt.
		if codes := c.stopNodes(ctx, a); e.codes == nil {
			e.codes = codes
		}
	}
	logDir := c.collectLogs(ctx, j, a)
	d := strategy.Decide(strategy.PolicyFrom(task.Recovery()),
		strategy.Counters{RecoveryCount: t.RecoveryCount, RestartsOnErrors: t.RestartsOnErrors},
		strategy.Ended{Outcome: e.outcome, ExitCodes: e.codes, Placement: attemptPlacement(a), Detail: e.detail},
		a.TaskIdx == len(p.Tasks)-1)
	end := store.End{
		Attempt: a, Outcome: string(e.outcome), ExitCodes: e.codes, Reason: e.reason,
		Action: string(d.Action), Decision: d.Reason,
		RecoveryCount: d.Counters.RecoveryCount, RestartsOnErrors: d.Counters.RestartsOnErrors,
	}
	terminal := false
	switch d.Action {
	case strategy.Recover, strategy.Restart:
		end.TaskStatus, end.JobStatus, end.StatusReason = lifecycle.Recovering, lifecycle.Recovering, d.Reason
		next := c.Now().Add(c.Config.RestartBackoff().Delay(d.Counters.Retries(), c.Rand))
		end.NextActionAt = &next
		if d.Action == strategy.Recover {
			end.PreemptedIn = placementJSON(attemptPlacement(a))
		}
	case strategy.NextTask:
		end.TaskStatus, end.JobStatus, end.NextTask = lifecycle.Succeeded, lifecycle.Starting, true
	case strategy.Succeed:
		end.TaskStatus, end.JobStatus, end.ClearKnownFailure = lifecycle.Succeeded, lifecycle.Succeeded, j.InputKey
		terminal = true
	default: // Fail, Cancel
		status := d.Status
		if status == "" {
			status = lifecycle.Failed
		}
		end.TaskStatus, end.JobStatus, end.FailureReason = status, status, d.Reason
		if (status == lifecycle.Failed || status == lifecycle.FailedSetup) && j.InputKey != "" {
			end.KnownFailure = &store.KnownFailure{InputKey: j.InputKey, JobID: j.ID, TaskName: taskName(p, a.TaskIdx),
				Status: status, ExitCodes: e.codes, LogPath: logDir}
		}
		terminal = true
	}
	if err := c.Store.EndAttempt(ctx, end); err != nil {
		if errors.Is(err, store.ErrAttemptEnded) || errors.Is(err, store.ErrTerminal) {
			return nil
		}
		return err
	}
	c.Log.Info("attempt ended", "job", j.ID, "task", a.TaskIdx, "attempt", a.Attempt, "outcome", e.outcome,
		"exit_codes", strategy.FormatExitCodes(e.codes), "decision", d.Action, "reason", d.Reason)
	if d.Action != strategy.Restart {
		c.terminate(ctx, a)
	}
	if terminal {
		c.cleanupSecrets(j.ID)
	}
	next := c.Now()
	if end.NextActionAt != nil {
		next = *end.NextActionAt
	}
	c.sched.ContinueAt(j.ID, next)
	return nil
}

func taskName(p *schema.Pipeline, i int) string {
	if n := p.Tasks[i].Name; n != "" {
		return n
	}
	return p.Name
}

// stopNodes stops the task on every reachable node of a's cluster and
// returns the exit codes the nodes recorded (nil where unknown).
func (c *Controller) stopNodes(ctx context.Context, a *store.Attempt) []*int {
	prov, err := c.Providers.Provider(ctx, a.Cloud)
	if err != nil {
		return nil
	}
	got, err := prov.Status(ctx, []string{a.Cluster})
	cl := got[a.Cluster]
	if err != nil || cl == nil {
		return nil
	}
	codes := make([]*int, len(cl.Nodes))
	for rank, n := range cl.Nodes {
		if n.State != provision.NodeRunning {
			continue
		}
		if st, ok := c.stopNode(ctx, prov, cl, rank, a); ok && st.Done {
			code := st.ExitCode
			codes[rank] = &code
		}
	}
	return codes
}

func (c *Controller) stopNode(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank int, a *store.Attempt) (node.Status, bool) {
	r, err := c.runner(ctx, prov, cl, rank, a)
	if err != nil {
		return node.Status{}, false
	}
	defer r.Close()
	if err := node.Stop(ctx, r); err != nil {
		c.Log.Warn("stop node", "cluster", a.Cluster, "rank", rank, "err", err)
	}
	st, err := node.Poll(ctx, r)
	return st, err == nil
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
