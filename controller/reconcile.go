package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/strategy"
)

// reconcile moves one job a step: read, compare, act. It is safe to run
// again after a crash at any point: each step either finds its work already
// recorded in the store or redoes an idempotent provider call. A step that
// panics (on state read back from a node, a provider's file, the store)
// ends its job FAILED_CONTROLLER with the panic as the reason; the daemon
// and the other jobs go on.
func (c *jobStep) reconcile(ctx context.Context, j *store.Job, a *store.Attempt, snap snapshot) (err error) {
	ctx = c.withStep(ctx, j, a)
	defer func() {
		if r := recover(); r != nil {
			err = c.failPanicked(ctx, j, r, debug.Stack())
		}
	}()
	return c.reconcileStep(ctx, j, a, snap)
}

// failPanicked ends j after a step of it panicked with r: its open attempt,
// if any (the step may have created it), ends with the job.
func (c *jobStep) failPanicked(ctx context.Context, j *store.Job, r any, stack []byte) (err error) {
	c.logger(ctx).Error("job step panicked", "panic", fmt.Sprint(r), "stack", string(stack))
	defer func() {
		if r2 := recover(); r2 != nil {
			// Ending the job panicked too: leave it to the next tick, which
			// tries again, rather than take the daemon down.
			err = fmt.Errorf("job %d: ending it after a panic (%v) panicked: %v", j.ID, r, r2)
		}
	}()
	a, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil {
		return fmt.Errorf("job %d panicked (%v); read its last attempt: %w", j.ID, r, err)
	}
	if a != nil && (a.State == lifecycle.AttemptEnded || isReplaced(a)) {
		a = nil
	}
	return c.failController(ctx, j, a, fmt.Errorf("panic: %v", r))
}

// brokenState returns the error of cloud's provider when it cannot be
// opened because its own state cannot be read back: no retry fixes that.
func (c *Controller) brokenState(ctx context.Context, cloud string) error {
	_, err := c.Providers.Provider(ctx, cloud)
	if se := (*provision.StateError)(nil); errors.As(err, &se) {
		return err
	}
	return nil
}

func (c *jobStep) reconcileStep(ctx context.Context, j *store.Job, a *store.Attempt, snap snapshot) error {
	if j.CancelRequested {
		select {
		case c.cancels <- struct{}{}:
			defer func() { <-c.cancels }()
		case <-ctx.Done():
			return nil // the next controller cancels it
		}
		return wrapf(c.cancel(ctx, j, a), "cancel")
	}
	if j.YieldFor != nil {
		return wrapf(c.yield(ctx, j, a), "preempt by priority")
	}
	if reason, over := c.overTime(j); over {
		return wrapf(c.timeOut(ctx, j, a, reason), "end at max_duration")
	}
	if reason, over := c.overBudget(j, a); over {
		return wrapf(c.stopOverBudget(ctx, j, a, reason), "end at max_cost")
	}
	if reason, over := c.ownerOverBudget(ctx, j.Owner); over {
		return wrapf(c.stopOverBudget(ctx, j, a, reason), "end at the owner's monthly budget")
	}
	if a != nil && a.Cloud != "" {
		if err := c.brokenState(ctx, a.Cloud); err != nil {
			return c.failController(ctx, j, a, err)
		}
	}
	if j.NextActionAt != nil && c.Now().Before(*j.NextActionAt) {
		return nil // backing off
	}
	if a != nil && a.State == lifecycle.AttemptRunning {
		// Watching needs no spec (endAttempt reads it when the attempt
		// ends): parsing it for every running job at every tick would be
		// most of a tick's work.
		return wrapf(c.observe(ctx, j, nil, a, snap), "observe %s", attemptName(a))
	}
	p, err := c.spec(j)
	if err != nil {
		return c.failController(ctx, j, a, err)
	}
	if a == nil && c.waitsForAdmission(j) {
		return nil // waiting for room under the limits (admit.go)
	}
	if a == nil {
		if a, err = c.nextAttempt(ctx, j); err != nil {
			if ob := (*overBudgetError)(nil); errors.As(err, &ob) {
				return wrapf(c.stopOverBudget(ctx, j, nil, ob.reason), "end at max_cost")
			}
			if errors.Is(err, store.ErrTerminal) || errors.Is(err, store.ErrOpenAttempt) || errors.Is(err, store.ErrCancelRequested) {
				return nil // the job moved on since it was read; the next look sees it as it is
			}
			return fmt.Errorf("create the next attempt: %w", err)
		}
		ctx = c.withStep(ctx, j, a)
	}
	task := p.Tasks[a.TaskIdx]
	switch a.State {
	case lifecycle.AttemptLaunching, lifecycle.AttemptStarting:
		// A launch can take minutes (instances booting, SSH refused): a
		// cancel requested meanwhile stops it at once (Tick aborts it).
		wctx, done := c.aborts.watch(ctx, j.ID)
		defer done()
		if requested, err := c.Store.CancelRequested(ctx, j.ID); err == nil && requested {
			// Requested after j was read, before the watch began.
			c.aborts.abort(j.ID)
		}
		if a.State == lifecycle.AttemptLaunching {
			err = wrapf(c.launchAttempt(wctx, j, p, a), "launch %s", attemptName(a))
		} else {
			err = wrapf(c.startAttempt(wctx, j, task, a), "start %s", attemptName(a))
		}
		if cancelled(wctx) && ctx.Err() == nil {
			return wrapf(c.cancelNow(ctx, j.ID), "stop")
		}
		return err
	case lifecycle.AttemptRunning:
		return wrapf(c.observe(ctx, j, p, a, snap), "observe %s", attemptName(a))
	}
	return nil
}

// wrapf says what was being done when err happened; nil stays nil.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// attemptName names an attempt in errors: "attempt 3", or "task 1 attempt
// 3" past a pipeline's first task.
func attemptName(a *store.Attempt) string {
	if a.TaskIdx > 0 {
		return fmt.Sprintf("task %d attempt %d", a.TaskIdx, a.Attempt)
	}
	return fmt.Sprintf("attempt %d", a.Attempt)
}

// nextAttempt creates the current task's next attempt: on the same cluster
// when the last one asked for a restart and its cluster is still healthy,
// else on a new cluster.
func (c *jobStep) nextAttempt(ctx context.Context, j *store.Job) (*store.Attempt, error) {
	last, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil {
		return nil, fmt.Errorf("read the last attempt: %w", err)
	}
	status := lifecycle.Starting
	var reuse *store.Attempt
	if isReplaced(last) {
		// Its node is under a notice and going: the replacement launches
		// beside it, and the drain tears it down (notice.go).
		name := func(n int) string { return provision.ClusterName(j.ID, j.CurrentTask, n) }
		return c.Store.NewAttempt(ctx, j.ID, j.CurrentTask, name, nil, lifecycle.Recovering)
	}
	if last != nil && last.State != lifecycle.AttemptEnded {
		// Read before another step of this job started that attempt: never
		// touch a live attempt's cluster.
		return nil, store.ErrOpenAttempt
	}
	if last != nil {
		status = lifecycle.Recovering
		if last.Action == string(strategy.Restart) && c.reusable(ctx, last) {
			if why, over := c.overBudgetOn(j, last); over {
				// A restart on the kept cluster is an attempt the
				// budget must pay an hour of too.
				return nil, &overBudgetError{reason: why}
			}
			// A controller killed between recording the end and stopping
			// the nodes left the last task running: stop it before the
			// next one starts beside it.
			if prov, cl, err := c.cluster(ctx, last); err == nil && cl != nil {
				grace := c.terminationGrace(j, last.TaskIdx)
				for rank := range cl.Nodes {
					c.stopNode(ctx, prov, cl, rank, last, grace)
				}
			}
			reuse = last
		} else {
			c.terminate(ctx, last)
		}
	}
	name := func(n int) string { return provision.ClusterName(j.ID, j.CurrentTask, n) }
	return c.Store.NewAttempt(ctx, j.ID, j.CurrentTask, name, reuse, status)
}

// reusable says whether a restart after a may run on a's cluster: every
// node of it running, and on a provider whose nodes run the task through
// sortie's agent. Nodes that run the task as their own command
// (provision.TaskRunner: pods with restartPolicy Never) run it once, so
// each restart there launches a new cluster.
func (c *Controller) reusable(ctx context.Context, a *store.Attempt) bool {
	prov, err := c.Providers.Provider(ctx, a.Cloud)
	if err != nil {
		return false
	}
	if _, ok := prov.(provision.TaskRunner); ok {
		return false
	}
	return c.healthy(ctx, a)
}

// healthy says whether every node of a's cluster is running.
func (c *Controller) healthy(ctx context.Context, a *store.Attempt) bool {
	_, cl, err := c.cluster(ctx, a)
	return err == nil && cl != nil && len(cl.Nodes) > 0 &&
		!slices.ContainsFunc(cl.Nodes, func(n provision.Node) bool { return n.State != provision.NodeRunning })
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
		c.logger(ctx).Warn("terminate", "cluster", a.Cluster, "err", err)
	}
}

// cancel stops the job's running attempt, keeps its logs, and ends the job
// CANCELLED; the tasks after it never start.
func (c *jobStep) cancel(ctx context.Context, j *store.Job, a *store.Attempt) error {
	e := ended{outcome: strategy.Cancelled, reason: reasonStopped, by: j.CancelledBy}
	if a == nil {
		return c.finishJob(ctx, j, e)
	}
	if a.State == lifecycle.AttemptLaunching {
		e.reason = reasonNotStarted
	}
	// A controller killed between the stop and the record finds the
	// cancel still asked for, and the codes on the nodes, next time.
	return c.stopAttempt(ctx, j, a, e)
}

// overTime applies strategy.OverTime to j's current task: it says whether
// j has run out of that task's max_duration. Each job's limits are read
// from its spec once, not at every tick.
func (c *Controller) overTime(j *store.Job) (string, bool) {
	v, ok := c.limits.Load(j.ID)
	if !ok {
		p, err := c.spec(j)
		if err != nil {
			return "", false // the step that needs the spec ends the job with this error
		}
		limits := make([]time.Duration, len(p.Tasks))
		for i, t := range p.Tasks {
			limits[i] = t.Recovery().MaxDuration.D()
		}
		v, _ = c.limits.LoadOrStore(j.ID, limits)
	}
	limits := v.([]time.Duration)
	if j.CurrentTask >= len(limits) {
		return "", false
	}
	return strategy.OverTime(strategy.Policy{MaxDuration: limits[j.CurrentTask]}, j.SubmittedAt, c.Now())
}

// timeOut ends a job that ran out of max_duration: as cancel does, it
// stops the running attempt (SIGTERM, then SIGKILL after the grace) and
// keeps its logs; a job between attempts, backing off, ends at once. The
// decision (FAILED, never recovered) is strategy.Decide's for timed_out.
func (c *jobStep) timeOut(ctx context.Context, j *store.Job, a *store.Attempt, reason string) error {
	e := ended{outcome: strategy.TimedOut, reason: reason, detail: reason}
	if a == nil {
		return c.finishJob(ctx, j, e)
	}
	w := c.wrapUp(ctx, j, a, true)
	e.codes = w.codes
	return c.finish(ctx, j, a, nil, e, w)
}

// cancelNow cancels job id as it now is, after its launch or start was
// stopped for the cancel (or for a preemption by priority, which it
// carries out instead): the attempt may have moved on meanwhile.
func (c *jobStep) cancelNow(ctx context.Context, id int64) error {
	j, err := c.Store.Job(ctx, id)
	if err != nil {
		return fmt.Errorf("read job %d: %w", id, err)
	}
	if j.Status.Terminal() {
		return nil
	}
	a, err := c.openAttempt(ctx, j)
	if err != nil {
		return fmt.Errorf("read the open attempt: %w", err)
	}
	if !j.CancelRequested && j.YieldFor != nil {
		// Stopped to make room for a job of higher priority.
		return c.yield(ctx, j, a)
	}
	return c.cancel(ctx, j, a)
}

// cluster asks a's cloud about a's cluster: nil when the cloud does not
// know it, or a was never placed.
func (c *Controller) cluster(ctx context.Context, a *store.Attempt) (provision.Provider, *provision.Cluster, error) {
	if a.Cloud == "" {
		return nil, nil, nil
	}
	prov, err := c.Providers.Provider(ctx, a.Cloud)
	if err != nil {
		return nil, nil, err
	}
	got, err := prov.Status(ctx, []string{a.Cluster})
	if err != nil {
		return prov, nil, fmt.Errorf("status of %s: %w", a.Cluster, err)
	}
	return prov, got[a.Cluster], nil
}

// Why a cancelled attempt ended: its nodes were stopped for the cancel,
// or it was cancelled before its task started. The decision names who
// cancelled.
const (
	reasonStopped    = "stopped for the cancel"
	reasonNotStarted = "cancelled before the task started"
)

// failController ends a job FAILED_CONTROLLER: sortie itself cannot go on
// with it (a spec it cannot read). Never silent: the reason is stored, and
// the open attempt, if any, ends with outcome controller_error.
func (c *jobStep) failController(ctx context.Context, j *store.Job, a *store.Attempt, cause error) error {
	e := c.controllerError(ctx, cause)
	if a == nil {
		return c.finishJob(ctx, j, e)
	}
	return c.finish(ctx, j, a, nil, e, nil)
}

// controllerError is the ending of a job sortie cannot go on with; it is
// logged, never silent.
func (c *Controller) controllerError(ctx context.Context, cause error) ended {
	c.logger(ctx).Error("job cannot continue", "err", cause)
	return ended{outcome: strategy.ControllerError, reason: fmt.Sprintf("controller error: %v", cause), detail: cause.Error()}
}
