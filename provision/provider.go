package provision

import (
	"context"
	"errors"
	"fmt"
	"io"

	"sortie/schema"
)

// Tag keys put on every cluster/instance sortie launches. Values are decimal ids.
const (
	TagManaged = "sortie-managed" // "true"
	TagCluster = "sortie-cluster" // cluster name
	TagJob     = "sortie-job"
	TagTask    = "sortie-task"
	TagAttempt = "sortie-attempt"
	TagRank    = "sortie-node-rank"
)

// ClusterName is the deterministic name of one attempt's cluster.
func ClusterName(job int64, task, attempt int) string {
	return fmt.Sprintf("sortie-%d-%d-%d", job, task, attempt)
}

// ClusterSpec is what to launch. Launch with the same Name is idempotent.
type ClusterSpec struct {
	Name      string
	Placement schema.Placement
	NumNodes  int
	Resources schema.Resources // instance type, cpus, memory, spot, disk, image
	Tags      map[string]string
	// Buckets says the task has buckets: its nodes need the cloud's
	// credentials for them (an instance profile on AWS).
	Buckets bool
	// AvoidHosts are machines the provider should place the nodes on
	// last, when it chooses among shared machines (Kubernetes nodes that
	// are quarantined); others ignore it.
	AvoidHosts []string
}

// NodeState is the cloud's view of one node.
type NodeState string

const (
	NodePending    NodeState = "pending"    // booting
	NodeRunning    NodeState = "running"    // up; the agent can be reached
	NodePreempted  NodeState = "preempted"  // the cloud took it away for its own reasons (a spot interruption, maintenance)
	NodeStopped    NodeState = "stopped"    // stopped, not by the cloud's own doing (a user's stop): a lost node
	NodeGone       NodeState = "gone"       // terminated or missing, not by sortie's asking
	NodeTerminated NodeState = "terminated" // terminated because sortie asked
)

// Node is one VM (or process group) of a cluster, in rank order.
type Node struct {
	Rank       int
	InstanceID string
	IP         string // address the task's peers use (SORTIE_NODE_IPS)
	// Host is the shared machine the node runs on, where the provider
	// places nodes on machines of its own choosing (a pod's Kubernetes
	// node); "" for a VM, which is its own machine.
	Host   string
	State  NodeState
	Reason string // cloud-given reason, e.g. "Server.SpotInstanceTermination"
	// LogReadable says the task's log can still be read through the
	// provider though the node is not running: it is going but still
	// answers (a pod in its grace period), or the provider read the log
	// while the node went (a pod taken away). The controller keeps the
	// log of a running node, or of one that says so; it never dials any
	// other.
	LogReadable bool
}

// Cluster is one attempt's set of nodes.
type Cluster struct {
	Name      string
	Placement schema.Placement
	Nodes     []Node
	Tags      map[string]string
	// Broken, when set, says why the provider's own record of the cluster
	// cannot be read back (a corrupt state file): its nodes' state is
	// unknown and no retry makes it known, so the job using the cluster
	// cannot go on. Terminate still removes what is left of it.
	Broken string
}

// Provider is one cloud backend.
type Provider interface {
	// Name is the cloud's name as written in resources.cloud ("local", "aws").
	Name() string
	// Placements lists the region/zones this provider offers that satisfy r's
	// cloud/region/zone, in the provider's order of preference (cheapest first
	// when it knows prices).
	Placements(ctx context.Context, r schema.Resources) ([]schema.Placement, error)
	// Launch creates the cluster and returns once every node is running. A
	// cluster of that name that already exists is returned as it is, never
	// launched twice. On error nothing of the cluster is left running. Errors
	// are classified with Capacity/Prechecks (see Classify).
	Launch(ctx context.Context, spec ClusterSpec) (*Cluster, error)
	// Status reports the named clusters with as few cloud calls as possible
	// (one per region, never one per cluster). A cluster absent from the map is
	// gone altogether.
	Status(ctx context.Context, names []string) (map[string]*Cluster, error)
	// Terminate removes the cluster's nodes. Idempotent: no error when gone.
	Terminate(ctx context.Context, name string) error
	// List returns every cluster carrying sortie's tags, live or not terminated.
	List(ctx context.Context) ([]*Cluster, error)
	// Runner reaches one node of a cluster to run commands on it.
	Runner(ctx context.Context, c *Cluster, rank int) (Runner, error)
}

// Runner runs short commands on a node. The node package builds the task
// agent, its start, polling and log reading on top of it.
type Runner interface {
	// Exec runs script with bash on the node, feeding stdin (may be nil), and
	// returns its stdout. A non-zero exit is an *ExitError.
	Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error)
	// Dir is the node's own directory for this cluster: the agent, its log,
	// exit code and the task's workdir copy live under it.
	Dir() string
	Close() error
}

// ExitError is a command on a node that ran and exited non-zero.
type ExitError struct {
	Code   int
	Stderr string
}

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d: %s", e.Code, e.Stderr) }

// StateError is a file a provider keeps its own state in that cannot be
// read back: no retry fixes it, so the controller ends the jobs that need
// that state FAILED_CONTROLLER, with this error as the reason.
type StateError struct {
	Path string
	Err  error
}

func (e *StateError) Error() string {
	return fmt.Sprintf("state file %s cannot be read back: %v (move it away to start afresh)", e.Path, e.Err)
}
func (e *StateError) Unwrap() error { return e.Err }

// ErrorClass says what the controller may do about a failed provider call.
type ErrorClass string

const (
	// ClassCapacity: no capacity or quota at this placement; try the next one.
	ClassCapacity ErrorClass = "capacity"
	// ClassPrechecks: no retry can fix it (credentials, unknown instance type
	// or image, infeasible request); the job ends FAILED_PRECHECKS.
	ClassPrechecks ErrorClass = "prechecks"
	// ClassTransient: anything else; retry the same call later.
	ClassTransient ErrorClass = "transient"
)

// Error is a classified provider error.
type Error struct {
	Class ErrorClass
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Capacity wraps err as a capacity error.
func Capacity(err error) error { return &Error{Class: ClassCapacity, Err: err} }

// Prechecks wraps err as an error no retry can fix.
func Prechecks(err error) error { return &Error{Class: ClassPrechecks, Err: err} }

// Classify returns err's class; unclassified errors are transient.
func Classify(err error) ErrorClass {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassTransient
}

// Stdio is what a command attached to a user's terminal reads and writes.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
	// TTY asks for a terminal on the node (an interactive shell); Term is
	// its type ($TERM), Rows and Cols its size (0: a default).
	TTY        bool
	Term       string
	Rows, Cols int
}

// Attacher is a Runner that can also run a command with the user's input
// and output streamed, for `jobs ssh`: a local node runs it here, a cloud
// node over SSH with a pty when TTY is asked.
type Attacher interface {
	// Attach runs script with bash on the node, in its directory, and
	// returns the script's exit status (128+N when killed by signal N).
	// An error means it could not be run at all.
	Attach(ctx context.Context, script string, stdio Stdio) (int, error)
}
