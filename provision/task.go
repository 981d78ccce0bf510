package provision

import "context"

// TaskRunner is a Provider whose nodes run the task themselves, as the
// command their cluster was launched with (Kubernetes pods run it as
// their container's command): no node agent runs there and no Runner
// reaches them. The controller starts, watches, reads and stops the task
// through the provider instead, where it would reach each node's agent.
//
// A node's task runs once: a restart on errors needs a new cluster (the
// controller launches one per attempt, never reusing an ended attempt's
// cluster on such a provider).
type TaskRunner interface {
	// StartTask hands t to every node of c, which then runs it. Starting
	// again is a no-op, so a controller that died half way starts again
	// safely. An error no retry can fix is classified Prechecks.
	StartTask(ctx context.Context, c *Cluster, t Task) error
	// TaskStatus is node rank's task as the cloud reports it.
	TaskStatus(ctx context.Context, c *Cluster, rank int) (TaskStatus, error)
	// ReadTaskLog returns node rank's log from byte offset on, at most max
	// bytes: a chunk shorter than max is the end of the log so far.
	ReadTaskLog(ctx context.Context, c *Cluster, rank int, offset int64, max int) ([]byte, error)
	// FilesLimit is the most bytes of Task.Files StartTask takes (the
	// task's workdir and file_mounts together); zero takes no files.
	FilesLimit() int64
	// StopTask stops node rank's task if it still runs, giving it the
	// task's termination grace; stopped, the node no longer counts as
	// running.
	StopTask(ctx context.Context, c *Cluster, rank int) error
}

// Task is what StartTask hands a cluster's nodes.
type Task struct {
	Setup, Run string
	// Env is exported to both phases on every node: the task's envs and
	// secrets and sortie's SORTIE_*/SKYPILOT_* values. It is the same on
	// every node: the provider sets each node's own values (its rank and
	// the nodes' addresses) itself.
	Env map[string]string
	// Files are the task's workdir and file_mounts sources, each file by
	// the path it takes on the node: relative paths are under the
	// directory the task runs in, absolute ones as given.
	Files []File
}

// File is one file a task is handed.
type File struct {
	Path string
	Mode uint32 // permission bits
	Data []byte
}

// TaskStatus is what a node says of its task.
type TaskStatus struct {
	// Started says the task was handed to the node (StartTask).
	Started bool
	// Done says the task ended; ExitCode is then its code and Phase the
	// phase that ended it (PhaseSetup or PhaseRun).
	Done     bool
	ExitCode int
	Phase    string
}

// Phases of a task.
const (
	PhaseSetup = "setup"
	PhaseRun   = "run"
)
