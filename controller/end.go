package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/schedule"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy"
)

// endAttempt keeps the attempt's logs, asks the strategy what to do, and
// writes the outcome, exit codes and decision in one transaction; only then
// does it stop what still runs on the nodes, and tear the cluster down
// unless the task restarts on it. Recording first means a controller killed
// at any point leaves either no end (the next one observes the nodes as
// they are, real exit codes included) or the true one.
func (c *jobStep) endAttempt(ctx context.Context, j *store.Job, a *store.Attempt, e ended) error {
	if e.seen.IsZero() {
		e.seen = time.Now()
	}
	e = underNotice(a, e)
	w := c.wrapUp(ctx, j, a, e.codes == nil)
	if e.codes == nil {
		e.codes = w.codes
	}
	p, err := c.spec(j)
	if err != nil {
		// The job cannot go on, but the exit codes seen and the logs kept
		// are the attempt's all the same.
		ce := c.controllerError(ctx, err)
		ce.codes = e.codes
		return c.finish(ctx, j, a, nil, ce, w)
	}
	return c.finish(ctx, j, a, p, e, w)
}

// finish is where every attempt ends: observed by endAttempt, cancelled,
// failed to launch, or given up by the controller. It asks strategy.Decide
// what follows e, writes it in one transaction, then stops the tasks still
// running on the attempt's nodes and tears the cluster down unless the task
// restarts on it. p, the job's pipeline, may be nil for the endings whose
// decision does not depend on the task's policy: a cancel, a launch
// failure, a controller error (which may be that the spec cannot be read).
// w is what wrapUp found of the attempt's cluster, nil when it was not asked.
func (c *jobStep) finish(ctx context.Context, j *store.Job, a *store.Attempt, p *schema.Pipeline, e ended, w *wrapped) error {
	tasks, err := c.Store.Tasks(ctx, j.ID)
	if err != nil {
		return fmt.Errorf("read tasks: %w", err)
	}
	t := tasks[a.TaskIdx]
	var policy strategy.Policy
	var size strategy.Size
	last := a.TaskIdx == j.NumTasks-1
	if p != nil {
		policy = strategy.PolicyFrom(p.Tasks[a.TaskIdx].Recovery())
		last = a.TaskIdx == len(p.Tasks)-1
		size = attemptSize(p.Tasks[a.TaskIdx], a)
	}
	counters := strategy.Counters{RecoveryCount: t.RecoveryCount, RestartsOnErrors: t.RestartsOnErrors}
	if policy.MaxRecoveries > 0 && (e.outcome == strategy.Preempted || e.outcome == strategy.NodeLost) {
		if counters.LossRecoveries, err = c.lossRecoveries(ctx, a); err != nil {
			return err
		}
	}
	if policy.MaxRestartsWithoutProgress != nil {
		if counters.Progress, err = c.progressState(ctx, a); err != nil {
			return err
		}
	}
	if p != nil && ranTask(e.outcome) {
		c.recordCheckpoint(ctx, p.Tasks[a.TaskIdx], a)
	}
	ended := strategy.Ended{Outcome: e.outcome, ExitCodes: e.codes, Placement: attemptPlacement(a), Detail: e.detail, Prechecks: e.prechecks, Size: size, By: e.by,
		Attempt: a.Attempt, Progress: a.Progress, Checkpoint: a.Checkpoint, Started: a.StartedAt}
	if p != nil {
		if err := c.onDemandFacts(ctx, policy, p.Tasks[a.TaskIdx], a, c.Now(), &counters, &ended); err != nil {
			return err
		}
	}
	d := strategy.Decide(policy, counters, ended, last)
	var confirmed strategy.Confirmed
	if p != nil {
		if confirmed, err = c.confirm(ctx, p.Tasks[a.TaskIdx], a, counters, ended, d); err != nil {
			return err
		}
		d = confirmed.Decision
	}
	var next *time.Time
	if d.Action == strategy.Recover || d.Action == strategy.Restart || d.Action == strategy.Escalate {
		at := c.Now().Add(c.Config.RestartBackoff().Delay(d.Counters.Retries(), c.Rand))
		next = &at
	}
	facts := store.Facts{NextActionAt: next, ConfirmFrom: confirmed.Start, Verdict: confirmed.Verdict}
	if w != nil {
		facts.LogPath = w.logDir
	}
	if p != nil {
		facts.TaskName = taskName(p, a.TaskIdx)
	}
	kept := strategy.KeepOnFailure(c.keepFor(j, p, a.TaskIdx), strategy.Ended{Outcome: e.outcome}, d, c.Now())
	if kept.Keep {
		facts.KeptUntil = &kept.Until
	}
	c.pause(PauseEnding, j.ID, a.Attempt)
	cost := c.attemptCost(a, c.Now())
	if err := c.Store.EndAttempt(ctx, a, store.Observed{Outcome: e.outcome, ExitCodes: e.codes, Reason: e.reason, Cost: cost}, d, facts); err != nil {
		if errors.Is(err, store.ErrAttemptEnded) || errors.Is(err, store.ErrTerminal) {
			return nil // ended meanwhile: whoever ended it tears down
		}
		return fmt.Errorf("record the end of %s: %w", attemptName(a), err)
	}
	c.logger(ctx).Info("attempt ended", "outcome", e.outcome,
		"exit_codes", strategy.FormatExitCodes(e.codes), "decision", d.Action, "reason", d.Reason)
	c.counted(j.ID, a.TaskIdx, e, d, t.RecoveryCount)
	c.countCost(j, a, cost)
	// What follows a recorded end is done even by a controller that is
	// stopping: a graceful stop leaves no attempt ended with its task
	// still running or its cluster up.
	c.pause(PauseEnded, j.ID, a.Attempt)
	actx, cancel := afterEnd(ctx)
	defer cancel()
	if w != nil && e.outcome != strategy.Succeeded {
		c.stopLeftovers(actx, j, a, w)
	}
	switch {
	case kept.Keep:
		// Recorded with the end: the orphan sweep leaves it until then,
		// and ReleaseKept tears it down at that time or when asked.
		c.Log.Info("cluster kept after the failure", "job", j.ID, "cluster", a.Cluster, "until", kept.Until)
	case d.Action != strategy.Restart:
		c.terminate(actx, a)
	}
	if d.Status.Terminal() {
		pp := p
		if pp == nil {
			pp, _ = c.spec(j)
		}
		c.deleteBuckets(actx, j, pp)
		c.cleanupSecrets(j.ID)
		c.limits.Delete(j.ID)
		c.budgets.m.Delete(j.ID)
		c.forgetSeen(j.ID, j.NumTasks)
	}
	if next == nil {
		now := c.Now()
		next = &now
	}
	c.sched.ContinueAt(j.ID, *next)
	return nil
}

// lossRecoveries counts the recoveries from preemption or node loss that
// a's task has made: the attempts that ended so and were recovered. They
// are read from the attempts, which keep them durably, rather than kept
// as a counter of their own.
func (c *Controller) lossRecoveries(ctx context.Context, a *store.Attempt) (int, error) {
	all, err := c.Store.Attempts(ctx, a.JobID)
	if err != nil {
		return 0, fmt.Errorf("read attempts: %w", err)
	}
	n := 0
	for _, b := range all {
		loss := b.Outcome == string(strategy.Preempted) || b.Outcome == string(strategy.NodeLost)
		if b.TaskIdx == a.TaskIdx && b.ID != a.ID && loss && b.Action == string(strategy.Recover) {
			n++
		}
	}
	return n, nil
}

// teardownGrace is how long a stopping controller goes on with the work
// that follows an end it recorded.
const teardownGrace = 20 * time.Second

// afterEnd is the context of the work that must follow a recorded end: it
// outlives ctx by teardownGrace.
func afterEnd(ctx context.Context) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(teardownGrace, cancel) })
	return actx, func() {
		stop()
		cancel()
	}
}

// finishJob ends a job that has no open attempt as e decides (a cancel, a
// controller error), and tears down the cluster its last attempt kept for
// a restart.
func (c *jobStep) finishJob(ctx context.Context, j *store.Job, e ended) error {
	last, err := c.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil {
		return fmt.Errorf("read the last attempt: %w", err)
	}
	d := strategy.Decide(strategy.Policy{}, strategy.Counters{}, strategy.Ended{Outcome: e.outcome, Detail: e.detail, By: e.by}, false)
	if err := c.Store.FinishJob(ctx, j.ID, d); err != nil {
		if errors.Is(err, store.ErrTerminal) || errors.Is(err, store.ErrOpenAttempt) {
			return nil // ended meanwhile, or an attempt started: the next look ends that
		}
		return fmt.Errorf("end the job: %w", err)
	}
	c.logger(ctx).Info("job ended", "status", d.Status, "reason", d.Reason)
	c.Metrics.Decisions.WithLabelValues(string(d.Rule)).Inc()
	c.forgetSeen(j.ID, j.NumTasks)
	actx, cancel := afterEnd(ctx)
	defer cancel()
	c.terminate(actx, last)
	c.cleanupSecrets(j.ID)
	c.limits.Delete(j.ID)
	c.budgets.m.Delete(j.ID)
	return nil
}

func taskName(p *schema.Pipeline, i int) string {
	if n := p.Tasks[i].Name; n != "" {
		return n
	}
	return p.Name
}

// wrapped is what wrapUp found of an attempt's cluster.
type wrapped struct {
	prov   provision.Provider
	cl     *provision.Cluster // nil when the cloud does not know it
	logDir string             // the directory the attempt's logs are kept in (its job's)
	keep   bool               // logDir could be made
	codes  []*int             // the exit codes the nodes recorded, nil where unknown
}

// wrapUp asks the cloud about a's cluster once, reads the exit codes the
// nodes recorded (with codes), and keeps every reachable node's log on the
// controller, before anything is recorded or stopped. It stops nothing:
// a node still running has no exit code yet, and the one it gets when
// sortie stops it, after the end is recorded, is sortie's.
func (c *Controller) wrapUp(ctx context.Context, j *store.Job, a *store.Attempt, codes bool) *wrapped {
	w := &wrapped{logDir: home.JobLogDir(c.Config.Home, j.ID), keep: true}
	if err := os.MkdirAll(w.logDir, home.DirMode); err != nil {
		c.logger(ctx).Warn("log dir", "dir", w.logDir, "err", err)
		w.keep = false
	}
	prov, cl, err := c.cluster(ctx, a)
	if err != nil || cl == nil {
		if w.keep {
			why := fmt.Sprintf("cluster %s was gone when the attempt ended", a.Cluster)
			if err != nil {
				why = fmt.Sprintf("the cloud could not be asked about cluster %s when the attempt ended: %v", a.Cluster, err)
			}
			for rank := range a.InstanceIDs {
				c.logNotKept(j, a, rank, why)
			}
		}
		return w
	}
	w.prov, w.cl = prov, cl
	if codes {
		w.codes = c.recordedCodes(ctx, prov, cl, a, false)
	}
	if w.keep {
		c.keepLogs(ctx, j, a, prov, cl)
	}
	return w
}

// recordedCodes polls every running node of cl, all at once and each
// within LogDeadline, and returns the exit codes the tasks recorded
// themselves (nil where none, where the node did not answer, or, unless
// stopped, where sortie stopped the task). A node the cloud reports gone
// is never dialled. stopped takes the codes of tasks sortie stopped too:
// a cancel's, which are what the task did with its SIGTERM.
func (c *Controller) recordedCodes(ctx context.Context, prov provision.Provider, cl *provision.Cluster, a *store.Attempt, stopped bool) []*int {
	codes := make([]*int, len(cl.Nodes))
	var wg sync.WaitGroup
	for rank, n := range cl.Nodes {
		if n.State != provision.NodeRunning {
			continue // gone: never dialled
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, c.logDeadline())
			defer cancel()
			nt, err := c.nodeTask(pctx, prov, cl, rank, a)
			if err != nil {
				return
			}
			st, err := nt.Poll(pctx)
			nt.Close()
			if err == nil && st.Done && (stopped || !st.Stopped) && st.Invalid == "" {
				code := st.ExitCode
				codes[rank] = &code
			}
		}()
	}
	wg.Wait()
	return codes
}

// stopAttempt ends attempt a of job j as e says, stopping it first: an
// attempt still launching ran no task, and finish tears down whatever
// the launch made; otherwise the nodes still running are stopped, each
// given its grace (SIGTERM, then SIGKILL), and the codes they end with
// are recorded with e (a task that traps SIGTERM and exits 143 shows
// 143). A cancel, a spent budget and a preemption by priority end so.
func (c *jobStep) stopAttempt(ctx context.Context, j *store.Job, a *store.Attempt, e ended) error {
	if a.State == lifecycle.AttemptLaunching {
		return c.finish(ctx, j, a, nil, e, nil)
	}
	w := c.wrapUp(ctx, j, a, false)
	c.stopLeftovers(ctx, j, a, w)
	if w.cl != nil {
		e.codes = c.recordedCodes(ctx, w.prov, w.cl, a, true)
	}
	return c.finish(ctx, j, a, nil, e, w)
}

// stopLeftovers stops the task on every node of an ended attempt where it
// still runs (all at once, each within LogDeadline), so that no process outlives its attempt (a restart may reuse
// the cluster), and keeps those nodes' logs again with what the stop made
// them write.
func (c *Controller) stopLeftovers(ctx context.Context, j *store.Job, a *store.Attempt, w *wrapped) {
	if w.cl == nil {
		return
	}
	grace := c.terminationGrace(j, a.TaskIdx)
	var wg sync.WaitGroup
	for rank, n := range w.cl.Nodes {
		if n.State != provision.NodeRunning {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stopped := c.stopNode(ctx, w.prov, w.cl, rank, a, grace)
			if !stopped || !w.keep {
				return
			}
			nt, err := c.reach(ctx, w.prov, w.cl, rank, a)
			if err != nil {
				return
			}
			defer nt.Close()
			if err := c.keepLog(ctx, nt, home.NodeLog(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, rank), len(w.cl.Nodes)); err != nil {
				c.logger(ctx).Warn("keep node log", "cluster", a.Cluster, "rank", rank, "err", err)
				return
			}
			os.Remove(home.NodeLogMissing(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, rank))
		}()
	}
	wg.Wait()
}

// stopNode stops the task on one node unless it has ended; it says whether
// it stopped one. The task gets SIGTERM, then grace to end before SIGKILL
// (job_recovery.termination_grace, as a notice gives it): the controller
// waits on its own clock, asking the node now and then, and each node
// call is bounded by LogDeadline. A controller that is stopping (ctx
// ended) kills at once rather than leave the task running. On a provider
// whose nodes run the task themselves, the provider gives the grace
// (stopTask).
func (c *Controller) stopNode(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank int, a *store.Attempt, grace time.Duration) bool {
	if _, ok := prov.(provision.TaskRunner); ok {
		return c.stopTask(ctx, prov, cl, rank, a)
	}
	call := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, c.logDeadline())
	}
	pctx, cancel := call(ctx)
	r, err := c.runner(pctx, prov, cl, rank, a)
	cancel()
	if err != nil {
		return false
	}
	defer r.Close()
	pctx, cancel = call(ctx)
	st, err := node.Poll(pctx, r)
	cancel()
	if err == nil && st.Done {
		return false
	}
	pctx, cancel = call(ctx)
	live, err := node.Terminate(pctx, r)
	cancel()
	if err != nil {
		c.logger(ctx).Warn("stop node", "cluster", a.Cluster, "rank", rank, "err", err)
		return false
	}
	// The grace is over when the clock says so, or when the waits add up
	// to it (a clock that stands still).
	deadline, waited := c.Now().Add(grace), time.Duration(0)
	for wait := 50 * time.Millisecond; live; wait = min(2*wait, time.Second) {
		left := min(deadline.Sub(c.Now()), grace-waited)
		if left <= 0 || !c.sleep(ctx, min(wait, left)) {
			break
		}
		waited += min(wait, left)
		pctx, cancel = call(ctx)
		st, err := node.Poll(pctx, r)
		cancel()
		if err == nil && (st.Done || !st.AgentAlive) {
			// Ended, or its agent is gone: what is left, if anything,
			// is killed below.
			live = !st.Done
			break
		}
	}
	if !live {
		return true
	}
	kctx, cancel := call(context.WithoutCancel(ctx))
	defer cancel()
	if err := node.StopWithin(kctx, r, 0); err != nil {
		c.logger(ctx).Warn("stop node", "cluster", a.Cluster, "rank", rank, "err", err)
	}
	return true
}

// stopTask stops node rank's task through a provider whose nodes run it
// themselves (provision.TaskRunner), unless it has ended; the provider
// gives the task its termination grace (a pod's grace period). It says
// whether it stopped one.
func (c *Controller) stopTask(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank int, a *store.Attempt) bool {
	pctx, cancel := context.WithTimeout(ctx, c.logDeadline())
	defer cancel()
	nt, err := c.nodeTask(pctx, prov, cl, rank, a)
	if err != nil {
		return false
	}
	defer nt.Close()
	if st, err := nt.Poll(pctx); err == nil && st.Done {
		return false
	}
	if err := nt.Stop(pctx); err != nil {
		c.logger(ctx).Warn("stop node", "cluster", a.Cluster, "rank", rank, "err", err)
		return false
	}
	return true
}

// terminationGrace is job_recovery.termination_grace of j's task idx: how
// long a task told to stop has before SIGKILL.
func (c *Controller) terminationGrace(j *store.Job, idx int) time.Duration {
	if p, err := c.spec(j); err == nil && idx < len(p.Tasks) {
		if g := p.Tasks[idx].Recovery().TerminationGrace.D(); g > 0 {
			return g
		}
	}
	return node.DefaultTerminationGrace
}

// sleep waits d, or until ctx ends (false), on Sleep when a test set it.
func (c *Controller) sleep(ctx context.Context, d time.Duration) bool {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	return schedule.RealSleep(ctx, d)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
