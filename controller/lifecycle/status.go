// Package lifecycle defines the statuses of a managed job and the states of
// its attempts, once; the moves between them (moves.go); and how a job's
// status moves on each event the controller records (transitions.go), as
// pure functions the store asks before it writes. Everything
// else spells a status through these constants: the strategy's decisions,
// the store and its SQL, the service and the CLI. It imports nothing else
// of sortie's: statuses and their moves are spelled once, below everything.
package lifecycle

import "slices"

// Status is the status of a job, and of each task of its pipeline. The
// names are SkyPilot's managed-job statuses.
type Status string

// The statuses a job has not ended in.
const (
	Pending    Status = "PENDING"    // waiting to launch, or for capacity
	Starting   Status = "STARTING"   // a cluster is being found and the task started on it
	Running    Status = "RUNNING"    // the task runs on every node
	Recovering Status = "RECOVERING" // restarting or recovering after an attempt ended
	Cancelling Status = "CANCELLING" // the user asked to cancel; the controller is stopping it
)

// The terminal statuses: a job that reaches one never changes again.
const (
	Succeeded        Status = "SUCCEEDED"
	Cancelled        Status = "CANCELLED"
	Failed           Status = "FAILED"             // the user's code failed
	FailedSetup      Status = "FAILED_SETUP"       // the setup step failed
	FailedPrechecks  Status = "FAILED_PRECHECKS"   // the request cannot be met: no retry can fix it
	FailedNoResource Status = "FAILED_NO_RESOURCE" // no capacity after every placement and round
	FailedController Status = "FAILED_CONTROLLER"  // sortie itself could not go on with the job
)

// The two lists below are the one definition of which statuses are
// terminal; every other list, and the store's SQL, is derived from them.
// They are never written to.
var (
	active   = [...]Status{Pending, Starting, Running, Recovering, Cancelling}
	terminal = [...]Status{Succeeded, Cancelled, Failed, FailedSetup, FailedPrechecks, FailedNoResource, FailedController}
)

// Statuses lists every status, the non-terminal ones first.
func Statuses() []Status { return append(ActiveStatuses(), terminal[:]...) }

// ActiveStatuses lists the statuses of a job that has not ended.
func ActiveStatuses() []Status { return append([]Status(nil), active[:]...) }

// TerminalStatuses lists the statuses of a job that has ended.
func TerminalStatuses() []Status { return append([]Status(nil), terminal[:]...) }

// Terminal says whether s is final: a terminal status never changes.
func (s Status) Terminal() bool { return slices.Contains(terminal[:], s) }

// Valid says whether s names a status.
func (s Status) Valid() bool { return slices.Contains(active[:], s) || s.Terminal() }

// AttemptState is where an attempt is in its own short life.
type AttemptState string

const (
	AttemptLaunching AttemptState = "launching" // placement being sought; no cluster yet
	AttemptStarting  AttemptState = "starting"  // cluster up; the node agent being started
	AttemptRunning   AttemptState = "running"   // the agent started on every node
	AttemptEnded     AttemptState = "ended"     // outcome and exit codes written, once
)

// AttemptStates lists every attempt state in the order an attempt goes
// through them.
func AttemptStates() []AttemptState {
	return []AttemptState{AttemptLaunching, AttemptStarting, AttemptRunning, AttemptEnded}
}
