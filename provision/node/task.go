package node

import (
	"context"
	"fmt"

	"sortie/provision"
)

// Task is the task of one node of an attempt's cluster, as the controller
// watches, reads and stops it: through the node agent over a Runner on
// most clouds, through the provider itself where the nodes run the task
// on their own (provision.TaskRunner: Kubernetes pods).
type Task interface {
	Poll(ctx context.Context) (Status, error)
	// ReadLog returns the log from offset on, at most MaxLogChunk bytes.
	ReadLog(ctx context.Context, offset int64) ([]byte, error)
	Stop(ctx context.Context) error
	Close() error
}

// TaskOf reaches node rank's task of attempt's cluster cl: the provider's
// own when it is a provision.TaskRunner, else the node agent's in the
// attempt's directory (ForAttempt).
func TaskOf(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank, attempt int) (Task, error) {
	return TaskOfKey(ctx, prov, cl, rank, attempt, nil)
}

// TaskOfKey is TaskOf with the attempt's key, from which node rank's key
// (NodeKey) checks its exit code record; nil for an attempt without one.
func TaskOfKey(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank, attempt int, attemptKey []byte) (Task, error) {
	if tr, ok := prov.(provision.TaskRunner); ok {
		if rank < 0 || rank >= len(cl.Nodes) {
			return nil, fmt.Errorf("cluster %s has no node %d", cl.Name, rank)
		}
		return providerTask{tr: tr, cl: cl, rank: rank}, nil
	}
	r, err := prov.Runner(ctx, cl, rank)
	if err != nil {
		return nil, err
	}
	return AgentTask(ForAttemptKey(r, attempt, NodeKey(attemptKey, rank))), nil
}

// AgentTask is the task of the node agent r reaches (in r's directory).
func AgentTask(r provision.Runner) Task {
	return agentTask{r: r}
}

// agentTask reaches the node agent.
type agentTask struct{ r provision.Runner }

func (t agentTask) Poll(ctx context.Context) (Status, error) { return Poll(ctx, t.r) }
func (t agentTask) ReadLog(ctx context.Context, off int64) ([]byte, error) {
	return ReadLog(ctx, t.r, off)
}
func (t agentTask) Stop(ctx context.Context) error { return Stop(ctx, t.r) }
func (t agentTask) Close() error                   { return t.r.Close() }

// providerTask asks the provider, whose node runs the task by itself.
type providerTask struct {
	tr   provision.TaskRunner
	cl   *provision.Cluster
	rank int
}

// Poll reads the provider's TaskStatus as the agent's status says it: a
// node whose task has not ended is alive (the cloud runs it), since no
// agent of sortie's is there to die.
func (t providerTask) Poll(ctx context.Context) (Status, error) {
	st, err := t.tr.TaskStatus(ctx, t.cl, t.rank)
	if err != nil {
		return Status{}, err
	}
	phase := PhaseRun
	if st.Phase == provision.PhaseSetup {
		phase = PhaseSetup
	}
	return Status{Started: st.Started, Phase: phase, Done: st.Done, ExitCode: st.ExitCode, AgentAlive: !st.Done}, nil
}

func (t providerTask) ReadLog(ctx context.Context, off int64) ([]byte, error) {
	return t.tr.ReadTaskLog(ctx, t.cl, t.rank, off, MaxLogChunk)
}
func (t providerTask) Stop(ctx context.Context) error { return t.tr.StopTask(ctx, t.cl, t.rank) }
func (t providerTask) Close() error                   { return nil }
