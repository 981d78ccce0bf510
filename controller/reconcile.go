package controller

import (
	"context"
	"errors"
	"fmt"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/strategy"
)

// reconcile moves one job a step: read, compare, act. It is safe to run
// again after a crash at any point: each step either finds its work already
// recorded in the store or redoes an idempotent provider call.
func (c *Controller) reconcile(ctx context.Context, j *store.Job, a *store.Attempt, snap snapshot) error {
	if j.CancelRequested {
		return c.cancel(ctx, j, a)
	}
	if j.NextActionAt != nil && c.Now().Before(*j.NextActionAt) {
		return nil // backing off
	}
	if a != nil && a.State == lifecycle.AttemptRunning {
		// Watching needs no spec (endAttempt reads it): parsing every
		// running job's spec every tick was the largest cost of a tick with
		// 10,000 jobs.
		return c.observe(ctx, j, nil, a, snap)
	}
	p, err := spec(j)
	if err != nil {
		return c.failController(ctx, j, a, err)
	}
	if a == nil {
		if a, err = c.nextAttempt(ctx, j); err != nil {
			if errors.Is(err, store.ErrTerminal) || errors.Is(err, store.ErrOpenAttempt) || errors.Is(err, store.ErrCancelRequested) {
				return nil // the job moved on since it was read; the next look sees it as it is
			}
			return err
		}
	}
	task := p.Tasks[a.TaskIdx]
	switch a.State {
	case lifecycle.AttemptLaunching:
		return c.launchAttempt(ctx, j, p, a)
	case lifecycle.AttemptStarting:
		return c.startAttempt(ctx, j, task, a)
	case lifecycle.AttemptRunning:
		return c.observe(ctx, j, p, a, snap)
	}
	return nil
}

// nextAttempt creates the current task's next attempt: on the same cluster
// when the last one asked for a restart and its cluster is still healthy,
// else on a new cluster.
func (c *Controller) nextAttempt(ctx context.Context, j *store.Job) (*store.Attempt, error) {
	last, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil {
		return nil, err
	}
	status := lifecycle.Starting
	var reuse *store.Attempt
	if last != nil && last.State != lifecycle.AttemptEnded {
		// Read before another step of this job started that attempt: never
		// touch a live attempt's cluster.
		return nil, store.ErrOpenAttempt
	}
	if last != nil {
		status = lifecycle.Recovering
		if last.Action == string(strategy.Restart) && c.healthy(ctx, last) {
			reuse = last
		} else {
			c.terminate(ctx, last)
		}
	}
	name := func(n int) string { return provision.ClusterName(j.ID, j.CurrentTask, n) }
	return c.Store.NewAttempt(ctx, j.ID, j.CurrentTask, name, reuse, status)
}

// healthy says whether every node of a's cluster is running.
func (c *Controller) healthy(ctx context.Context, a *store.Attempt) bool {
	if a.Cloud == "" {
		return false
	}
	p, err := c.Providers.Provider(ctx, a.Cloud)
	if err != nil {
		return false
	}
	got, err := p.Status(ctx, []string{a.Cluster})
	if err != nil || got[a.Cluster] == nil || len(got[a.Cluster].Nodes) == 0 {
		return false
	}
	for _, n := range got[a.Cluster].Nodes {
		if n.State != provision.NodeRunning {
			return false
		}
	}
	return true
}

// terminate tears down a's cluster; errors are logged, never written over
// the job's outcome, and the orphan sweep retries them at the next start.
func (c *Controller) terminate(ctx context.Context, a *store.Attempt) {
	if a == nil || a.Cloud == "" {
		return
	}
	p, err := c.Providers.Provider(ctx, a.Cloud)
	if err == nil {
		err = p.Terminate(ctx, a.Cluster)
	}
	if err != nil {
		c.Log.Warn("terminate", "cluster", a.Cluster, "err", err)
	}
}

// cancel stops the job's running attempt, keeps its logs, and ends the job
// CANCELLED; the tasks after it never start.
func (c *Controller) cancel(ctx context.Context, j *store.Job, a *store.Attempt) error {
	if a == nil {
		last, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
		if err != nil {
			return err
		}
		if err := c.Store.FinishJob(ctx, j.ID, lifecycle.Cancelled, "", lifecycle.Cancelled); err != nil {
			if errors.Is(err, store.ErrTerminal) || errors.Is(err, store.ErrOpenAttempt) {
				return nil // ended meanwhile, or an attempt started: the next look cancels that
			}
			return err
		}
		// A cluster kept for a restart after a back-off goes too.
		c.terminate(ctx, last)
		c.cleanupSecrets(j.ID)
		return nil
	}
	var codes []*int
	if a.State != lifecycle.AttemptLaunching {
		codes = c.stopNodes(ctx, a)
	}
	c.collectLogs(ctx, j, a)
	tasks, err := c.Store.Tasks(ctx, j.ID)
	if err != nil {
		return err
	}
	t := tasks[a.TaskIdx]
	err = c.Store.EndAttempt(ctx, store.End{
		Attempt: a, Outcome: string(strategy.Cancelled), ExitCodes: codes, Reason: "cancelled by user",
		Action: string(strategy.Cancel), Decision: "cancelled by user",
		RecoveryCount: t.RecoveryCount, RestartsOnErrors: t.RestartsOnErrors, TaskStatus: lifecycle.Cancelled,
		JobStatus: lifecycle.Cancelled,
	})
	if err != nil && !errors.Is(err, store.ErrAttemptEnded) {
		return err
	}
	c.terminate(ctx, a)
	c.cleanupSecrets(j.ID)
	return nil
}

// failController ends a job FAILED_CONTROLLER: sortie itself cannot go on
// with it (a spec it cannot read). Never silent: the reason is stored.
func (c *Controller) failController(ctx context.Context, j *store.Job, a *store.Attempt, cause error) error {
	c.Log.Error("job cannot continue", "job", j.ID, "err", cause)
	reason := fmt.Sprintf("controller error: %v", cause)
	defer c.cleanupSecrets(j.ID)
	if a != nil {
		c.terminate(ctx, a)
		return c.Store.EndAttempt(ctx, store.End{Attempt: a, Outcome: string(strategy.LaunchFailed), Reason: reason,
			Action: string(strategy.Fail), Decision: reason, TaskStatus: lifecycle.FailedController,
			JobStatus: lifecycle.FailedController, FailureReason: reason})
	}
	last, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil {
		return err
	}
	c.terminate(ctx, last)
	return c.Store.FinishJob(ctx, j.ID, lifecycle.FailedController, reason, lifecycle.FailedController)
}
