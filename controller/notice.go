package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision/node"
	"sortie/provision/node/notice"
	"sortie/strategy"
)

// A node's preemption notice (the agent on the node hears it from the
// cloud's metadata service, or from `sortie local preempt --notice`) is
// reported in the node's status. The attempt under it is then recovered at
// once: the strategy decides as for a preemption, and when it recovers,
// the replacement's launch begins while the old node is still there
// (ReplaceAttempt). The old attempt stays open, its task checkpointing
// after the agent's SIGTERM, and ends as preempted when its node goes, its
// task has stopped, or the notice's deadline passes (drain).
//
// The one overlap: the replacement's cluster may be launched during the
// notice, but its task starts only once the old attempt has ended, so two
// attempts of a task never run their task at once, and what the old one
// wrote on SIGTERM (a checkpoint) is there before the new one starts.

// noticeSlack is how long after a notice's deadline a node that is still
// there is waited for before its attempt is ended all the same.
const noticeSlack = 5 * time.Second

// noticeWithoutDeadline bounds the wait for a node whose notice named no
// deadline (an unreadable time): AWS's two minutes.
const noticeWithoutDeadline = 2 * time.Minute

// noticeSource says where the agents on cloud's nodes hear preemption
// notices, and at which address ("" for the cloud's own), as the registry
// says; "" where they hear none.
func (c *Controller) noticeSource(cloud string) (source, endpoint string) {
	if f := clouds.Lookup(cloud).Notice; f != nil {
		return f(c.Config)
	}
	return "", ""
}

// nodeNotice is the notice a's nodes report, the first that ends its node
// first, else a rebalance recommendation; ok false when none.
func nodeNotice(sts []node.Status) (rank int, n notice.Notice, ok bool) {
	rank = -1
	for r, st := range sts {
		if st.Notice == nil {
			continue
		}
		heard := notice.Notice(*st.Notice)
		if heard.Ends() {
			return r, heard, true
		}
		if rank < 0 {
			rank, n = r, heard
		}
	}
	return rank, n, rank >= 0
}

// storedNotice is n as the store keeps it.
func storedNotice(n notice.Notice) store.Notice {
	s := store.Notice{Kind: n.Kind, Source: n.Source, At: n.At}
	if !n.Deadline.IsZero() {
		d := n.Deadline
		s.Deadline = &d
	}
	return s
}

// noticeEnds says whether a stored notice means the node goes.
func noticeEnds(n *store.Notice) bool {
	return n != nil && (notice.Notice{Kind: n.Kind}).Ends()
}

// heard records a notice reported by a's nodes and, when it ends a node,
// asks for a's replacement at once if the strategy recovers. It says
// whether a was replaced: a is then the drain's, not the observer's. A task
// that ended on its own on every node (ownEnd), before the notice's SIGTERM
// reached it, keeps its outcome: its exit codes are judged as they are.
func (c *jobStep) heard(ctx context.Context, j *store.Job, a *store.Attempt, rank int, n notice.Notice, ownEnd bool) (bool, error) {
	if a.Notice == nil || (a.Notice.Kind == store.NoticeRebalance && n.Ends()) {
		s := storedNotice(n)
		if _, err := c.Store.RecordNotice(ctx, a, s); err != nil {
			return false, err
		}
		a.Notice = &s
		c.Log.Info("preemption notice", "job", j.ID, "attempt", a.Attempt, "node", rank, "kind", n.Kind, "source", n.Source, "deadline", n.Deadline)
	}
	if !noticeEnds(a.Notice) || a.ReplacedAt != nil || ownEnd {
		return false, nil
	}
	return c.replace(ctx, j, a, rank)
}

// endedOnItsOwn says whether the task has ended on every node by itself:
// an exit code everywhere, none of them caused by a stop (a notice's
// SIGTERM, or sortie's).
func endedOnItsOwn(sts []node.Status) bool {
	return !slices.ContainsFunc(sts, func(st node.Status) bool { return !st.Done || st.Stopped })
}

// replace asks the strategy what follows a preemption of a and, when it is
// a recovery, records it (store.ReplaceAttempt) and goes on with the job at
// once. Any other decision (a budget of recoveries spent, a cancel) waits
// for a to end as it would without a notice.
func (c *jobStep) replace(ctx context.Context, j *store.Job, a *store.Attempt, rank int) (bool, error) {
	p, err := c.spec(j)
	if err != nil {
		return false, nil // the step that needs the spec ends the job with this error
	}
	tasks, err := c.Store.Tasks(ctx, j.ID)
	if err != nil {
		return false, fmt.Errorf("read tasks: %w", err)
	}
	t := tasks[a.TaskIdx]
	policy := strategy.PolicyFrom(p.Tasks[a.TaskIdx].Recovery())
	counters := strategy.Counters{RecoveryCount: t.RecoveryCount, RestartsOnErrors: t.RestartsOnErrors}
	if policy.MaxRecoveries > 0 {
		if counters.LossRecoveries, err = c.lossRecoveries(ctx, a); err != nil {
			return false, err
		}
	}
	if policy.MaxRestartsWithoutProgress != nil {
		if counters.Progress, err = c.progressState(ctx, a); err != nil {
			return false, err
		}
	}
	d := strategy.Decide(policy, counters,
		strategy.Ended{Outcome: strategy.Preempted, Placement: attemptPlacement(a), Detail: noticeDetail(rank, a.Notice),
			Attempt: a.Attempt, Progress: a.Progress},
		a.TaskIdx == len(p.Tasks)-1)
	if d.Action != strategy.Recover || j.CancelRequested {
		return false, nil
	}
	// No back-off: a notice is the cloud's doing, not a code that fails
	// again and again, and the replacement's head start is the point.
	err = c.Store.ReplaceAttempt(ctx, a, d, store.Facts{})
	if errors.Is(err, store.ErrReplaced) || errors.Is(err, store.ErrAttemptEnded) || errors.Is(err, store.ErrTerminal) {
		return false, nil // moved on since it was read
	}
	if err != nil {
		return false, fmt.Errorf("record the replacement of %s: %w", attemptName(a), err)
	}
	now := c.Now()
	a.ReplacedAt = &now
	c.Log.Info("replacement asked before the node went", "job", j.ID, "attempt", a.Attempt, "decision", d.Reason)
	c.sched.ContinueAt(j.ID, now)
	return true, nil
}

// noticeDetail says what notice a decision followed.
func noticeDetail(rank int, n *store.Notice) string {
	s := fmt.Sprintf("%s notice from %s", n.Kind, n.Source)
	if rank >= 0 {
		s = fmt.Sprintf("%s notice on node %d from %s", n.Kind, rank, n.Source)
	}
	if n.Deadline != nil {
		s += ", deadline " + n.Deadline.UTC().Format(time.RFC3339)
	}
	return s
}

// underNotice makes an ending of an attempt whose node had a notice that
// ends it a preemption: the task was stopped by the agent for the cloud,
// whatever code that left.
func underNotice(a *store.Attempt, e ended) ended {
	if !noticeEnds(a.Notice) || e.outcome == strategy.Succeeded || e.outcome == strategy.Preempted || e.outcome == strategy.Cancelled || e.outcome == strategy.TimedOut || e.outcome == strategy.ControllerError {
		return e
	}
	e.outcome = strategy.Preempted
	e.detail = noticeDetail(-1, a.Notice)
	e.reason = fmt.Sprintf("%s after a %s notice", e.reason, a.Notice.Kind)
	return e
}

// drainEvery: of the ticks that spread a poll interval over its shards,
// one in drainEvery looks at the replaced attempts (about once a second
// with the default 20 shards of 5s): each look asks the cloud about the
// attempt's cluster and polls its nodes.
const drainEvery = 4

// drains runs the drains of replaced attempts, each in a goroutine of its
// own and one at a time per attempt.
type drains struct {
	mu     sync.Mutex
	active map[int64]bool
	wg     sync.WaitGroup
}

// drainAll starts a drain of every replaced attempt that has none under
// way. Replaced attempts are few and their nodes about to go, so they are
// looked at every tick, not once per poll interval.
func (c *Controller) drainAll(ctx context.Context) error {
	as, err := c.Store.ReplacedAttempts(ctx)
	if err != nil {
		return fmt.Errorf("list replaced attempts: %w", err)
	}
	for _, a := range as {
		c.drains.mu.Lock()
		if c.drains.active == nil {
			c.drains.active = map[int64]bool{}
		}
		busy := c.drains.active[a.ID]
		c.drains.active[a.ID] = true
		c.drains.mu.Unlock()
		if busy {
			continue
		}
		dctx, s, done, ok := c.drainable(ctx, a)
		if !ok {
			c.drains.mu.Lock()
			delete(c.drains.active, a.ID)
			c.drains.mu.Unlock()
			continue
		}
		c.drains.wg.Add(1)
		go func() {
			defer c.drains.wg.Done()
			defer done()
			defer func() {
				c.drains.mu.Lock()
				delete(c.drains.active, a.ID)
				c.drains.mu.Unlock()
			}()
			if err := c.lostLease(a.JobID, s.drain(dctx, a)); err != nil && ctx.Err() == nil {
				c.Log.Warn("drain a replaced attempt", "job", a.JobID, "attempt", a.Attempt, "err", err)
			}
		}()
	}
	return nil
}

// drain ends replaced attempt a once its node is gone, its task has
// stopped, the notice's deadline has passed, or its job has ended: as
// preempted, with its logs kept and its cluster torn down. The job's next
// attempt, waiting to start its task, then goes on.
func (c *jobStep) drain(ctx context.Context, a *store.Attempt) error {
	j, err := c.Store.Job(ctx, a.JobID)
	if err != nil {
		return fmt.Errorf("read job: %w", err)
	}
	reason, done := c.drained(ctx, j, a)
	if !done {
		return nil
	}
	w := c.wrapUp(ctx, j, a, true)
	cost := c.attemptCost(a, c.Now())
	if err := c.Store.EndReplaced(ctx, a, store.Observed{Outcome: strategy.Preempted, ExitCodes: w.codes, Reason: reason, Cost: cost}); err != nil {
		if errors.Is(err, store.ErrAttemptEnded) {
			return nil
		}
		return fmt.Errorf("record the end of %s: %w", attemptName(a), err)
	}
	c.countCost(j, a, cost)
	c.Log.Info("replaced attempt ended", "job", j.ID, "attempt", a.Attempt, "reason", reason)
	actx, cancel := afterEnd(ctx)
	defer cancel()
	c.stopLeftovers(actx, j, a, w)
	c.terminate(actx, a)
	c.Wake()
	return nil
}

// drained says whether replaced attempt a is over, and why.
func (c *jobStep) drained(ctx context.Context, j *store.Job, a *store.Attempt) (string, bool) {
	if j.Status.Terminal() || j.CancelRequested {
		return fmt.Sprintf("job %s while its node was under a %s notice", cmpStatus(j), a.Notice.Kind), true
	}
	deadline := a.Notice.At.Add(noticeWithoutDeadline)
	if a.Notice.Deadline != nil {
		deadline = *a.Notice.Deadline
	}
	past := c.Now().After(deadline.Add(noticeSlack))
	prov, cl, err := c.cluster(ctx, a)
	if err != nil {
		if past {
			// Whatever the cloud says later, it has taken the node by now.
			return fmt.Sprintf("the %s notice's deadline (%s) passed; the cloud did not answer: %v", a.Notice.Kind, deadline.UTC().Format(time.RFC3339), err), true
		}
		return "", false // the cloud did not answer: unknown, not gone
	}
	if cl == nil {
		return fmt.Sprintf("cluster %s went after its %s notice", a.Cluster, a.Notice.Kind), true
	}
	if e, ok := cloudEnded(cl, a); ok {
		return fmt.Sprintf("%s after its %s notice", e.reason, a.Notice.Kind), true
	}
	stopped := true
	for rank := range cl.Nodes {
		nt, err := c.nodeTask(ctx, prov, cl, rank, a)
		if err != nil {
			stopped = false
			continue
		}
		st, err := nt.Poll(ctx)
		nt.Close()
		if err != nil || (!st.Done && st.AgentAlive) {
			stopped = false
		}
		if err == nil && (st.Storage != nil || st.Progress != nil) {
			// The last upload, made after the notice, is reported here,
			// and the progress recorded as the task ended.
			sts := make([]node.Status, rank+1)
			sts[rank] = st
			c.recordStorage(ctx, a, sts)
			c.recordProgress(ctx, a, sts)
		}
	}
	if stopped {
		return fmt.Sprintf("the task stopped after the %s notice", a.Notice.Kind), true
	}
	if past {
		return fmt.Sprintf("the %s notice's deadline (%s) passed with the node still there", a.Notice.Kind, deadline.UTC().Format(time.RFC3339)), true
	}
	return "", false
}

func cmpStatus(j *store.Job) string {
	if j.CancelRequested && !j.Status.Terminal() {
		return "cancelled"
	}
	return "ended " + string(j.Status)
}

// waitForReplaced says, for an attempt about to start its task, which
// attempt of the same task is still draining: the task starts only once
// that one has ended. nil when none.
func (c *Controller) waitForReplaced(ctx context.Context, a *store.Attempt) (*store.Attempt, error) {
	if a.Attempt == 1 {
		// A task's first attempt has no earlier one that could drain: the
		// store is not asked, at the start of most jobs.
		return nil, nil
	}
	as, err := c.Store.ReplacedAttemptsOf(ctx, a.JobID)
	if err != nil {
		return nil, err
	}
	for _, b := range as {
		if b.TaskIdx == a.TaskIdx && b.ID != a.ID {
			return b, nil
		}
	}
	return nil, nil
}

// isReplaced says whether a is a replaced attempt that has not ended.
func isReplaced(a *store.Attempt) bool {
	return a != nil && a.ReplacedAt != nil && a.State != lifecycle.AttemptEnded
}
