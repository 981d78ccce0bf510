package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"sortie/controller/home"
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
	// Stop what is left of a failed attempt so no process outlives it.
	codes, logDir := c.wrapUp(ctx, j, a, e.outcome != strategy.Succeeded)
	if e.codes == nil {
		e.codes = codes
	}
	p, err := spec(j)
	if err != nil {
		// The job cannot go on, but the exit codes seen and the logs kept
		// are the attempt's all the same.
		ce := c.controllerError(j, err)
		ce.codes = e.codes
		return c.finish(ctx, j, a, nil, ce, logDir)
	}
	return c.finish(ctx, j, a, p, e, logDir)
}

// finish is where every attempt ends: observed by endAttempt, cancelled,
// failed to launch, or given up by the controller. It asks strategy.Decide
// what follows e, writes it in one transaction, and then tears the cluster
// down unless the task restarts on it. p, the job's pipeline, may be nil
// for the endings whose decision does not depend on the task's policy: a
// cancel, a launch failure, a controller error (which may be that the spec
// cannot be read). logDir is where the attempt's logs were kept, if anywhere.
func (c *Controller) finish(ctx context.Context, j *store.Job, a *store.Attempt, p *schema.Pipeline, e ended, logDir string) error {
	tasks, err := c.Store.Tasks(ctx, j.ID)
	if err != nil {
		return fmt.Errorf("read tasks: %w", err)
	}
	t := tasks[a.TaskIdx]
	var policy strategy.Policy
	last := a.TaskIdx == j.NumTasks-1
	if p != nil {
		policy = strategy.PolicyFrom(p.Tasks[a.TaskIdx].Recovery())
		last = a.TaskIdx == len(p.Tasks)-1
	}
	d := strategy.Decide(policy,
		strategy.Counters{RecoveryCount: t.RecoveryCount, RestartsOnErrors: t.RestartsOnErrors},
		strategy.Ended{Outcome: e.outcome, ExitCodes: e.codes, Placement: attemptPlacement(a), Detail: e.detail, Prechecks: e.prechecks},
		last)
	var next *time.Time
	if d.Action == strategy.Recover || d.Action == strategy.Restart {
		at := c.Now().Add(c.Config.RestartBackoff().Delay(d.Counters.Retries(), c.Rand))
		next = &at
	}
	facts := store.Facts{NextActionAt: next, LogPath: logDir}
	if p != nil {
		facts.TaskName = taskName(p, a.TaskIdx)
	}
	if err := c.Store.EndAttempt(ctx, a, store.Observed{Outcome: e.outcome, ExitCodes: e.codes, Reason: e.reason}, d, facts); err != nil {
		if errors.Is(err, store.ErrAttemptEnded) || errors.Is(err, store.ErrTerminal) {
			return nil // ended meanwhile: whoever ended it tears down
		}
		return fmt.Errorf("record the end of %s: %w", attemptName(a), err)
	}
	c.Log.Info("attempt ended", "job", j.ID, "task", a.TaskIdx, "attempt", a.Attempt, "outcome", e.outcome,
		"exit_codes", strategy.FormatExitCodes(e.codes), "decision", d.Action, "reason", d.Reason)
	if d.Action != strategy.Restart {
		c.terminate(ctx, a)
	}
	if d.Status.Terminal() {
		c.cleanupSecrets(j.ID)
	}
	if next == nil {
		now := c.Now()
		next = &now
	}
	c.sched.ContinueAt(j.ID, *next)
	return nil
}

// finishJob ends a job that has no open attempt as e decides (a cancel, a
// controller error), and tears down the cluster its last attempt kept for
// a restart.
func (c *Controller) finishJob(ctx context.Context, j *store.Job, e ended) error {
	last, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil {
		return fmt.Errorf("read the last attempt: %w", err)
	}
	d := strategy.Decide(strategy.Policy{}, strategy.Counters{}, strategy.Ended{Outcome: e.outcome, Detail: e.detail}, false)
	if err := c.Store.FinishJob(ctx, j.ID, d); err != nil {
		if errors.Is(err, store.ErrTerminal) || errors.Is(err, store.ErrOpenAttempt) {
			return nil // ended meanwhile, or an attempt started: the next look ends that
		}
		return fmt.Errorf("end the job: %w", err)
	}
	c.Log.Info("job ended", "job", j.ID, "status", d.Status, "reason", d.Reason)
	c.terminate(ctx, last)
	c.cleanupSecrets(j.ID)
	return nil
}

func taskName(p *schema.Pipeline, i int) string {
	if n := p.Tasks[i].Name; n != "" {
		return n
	}
	return p.Name
}

// wrapUp ends what is left of attempt a on its nodes, asking the cloud
// about its cluster once: with stop, it stops the task on every reachable
// node and returns the exit codes they recorded (nil where unknown); then
// it keeps every reachable node's log on the controller, before the
// cluster is torn down. It returns the log directory.
func (c *Controller) wrapUp(ctx context.Context, j *store.Job, a *store.Attempt, stop bool) ([]*int, string) {
	dir := home.LogDir(c.Config.Home, j.ID, a.TaskIdx, a.Attempt)
	keep := true
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.Log.Warn("log dir", "dir", dir, "err", err)
		keep = false
	}
	prov, cl, err := c.cluster(ctx, a)
	if err != nil || cl == nil {
		return nil, dir
	}
	var codes []*int
	if stop {
		codes = c.stopNodes(ctx, prov, cl, a)
	}
	if keep {
		c.keepLogs(ctx, j, a, prov, cl)
	}
	return codes, dir
}

// stopNodes stops the task on every running node of cl and returns the
// exit codes the nodes recorded (nil where unknown).
func (c *Controller) stopNodes(ctx context.Context, prov provision.Provider, cl *provision.Cluster, a *store.Attempt) []*int {
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
