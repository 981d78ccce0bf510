package controller

import (
	"time"

	"sortie/controller/metrics"
	"sortie/strategy"
)

// taskKey names one task of one job.
type taskKey struct {
	job  int64
	task int
}

// counted counts a recorded end of an attempt in the metrics: its outcome,
// the rule that decided what follows, a recovery when the decision made
// one (recoveries is the task's count before it), and, when the task goes
// on, when the end was seen, for the decision latency.
func (c *Controller) counted(job int64, task int, e ended, d strategy.Decision, recoveries int) {
	m := c.Metrics
	m.AttemptsEnded.WithLabelValues(string(e.outcome)).Inc()
	m.Decisions.WithLabelValues(string(d.Rule)).Inc()
	if d.Counters.RecoveryCount > recoveries {
		m.Recoveries.WithLabelValues(recoveryCause(e.outcome)).Inc()
	}
	if (d.Action == strategy.Recover || d.Action == strategy.Restart) && !e.seen.IsZero() {
		c.seen.Store(taskKey{job, task}, e.seen)
	}
}

// recoveryCause is the cause label of a recovery after outcome.
func recoveryCause(o strategy.Outcome) string {
	switch o {
	case strategy.Preempted:
		return "preemption"
	case strategy.NodeLost:
		return "node_lost"
	}
	return "exit_code"
}

// requested observes the decision latency of a task whose next attempt the
// controller now asks for (a launch, or a start on the kept cluster): the
// first request after a seen end counts, once.
func (c *Controller) requested(job int64, task int) {
	if v, ok := c.seen.LoadAndDelete(taskKey{job, task}); ok {
		metrics.Since(c.Metrics.DecisionLatency, v.(time.Time))
	}
}

// forgetSeen drops the seen ends of a job that has ended.
func (c *Controller) forgetSeen(job int64, tasks int) {
	for i := range max(tasks, 1) {
		c.seen.Delete(taskKey{job, i})
	}
}
