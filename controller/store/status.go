package store

// Job statuses, the same names as SkyPilot's managed jobs.
const (
	Pending    = "PENDING"
	Starting   = "STARTING"
	Running    = "RUNNING"
	Recovering = "RECOVERING"
	Cancelling = "CANCELLING"

	Succeeded        = "SUCCEEDED"
	Cancelled        = "CANCELLED"
	Failed           = "FAILED"
	FailedSetup      = "FAILED_SETUP"
	FailedPrechecks  = "FAILED_PRECHECKS"
	FailedNoResource = "FAILED_NO_RESOURCE"
	FailedController = "FAILED_CONTROLLER"
)

// Statuses lists every job status, non-terminal first.
var Statuses = []string{Pending, Starting, Running, Recovering, Cancelling,
	Succeeded, Cancelled, Failed, FailedSetup, FailedPrechecks, FailedNoResource, FailedController}

var terminalStatuses = []string{Succeeded, Cancelled, Failed, FailedSetup, FailedPrechecks, FailedNoResource, FailedController}

// IsTerminal says whether status is final: a terminal status never changes.
func IsTerminal(status string) bool {
	for _, s := range terminalStatuses {
		if s == status {
			return true
		}
	}
	return false
}

// ValidStatus says whether s names a job status.
func ValidStatus(s string) bool {
	for _, v := range Statuses {
		if v == s {
			return true
		}
	}
	return false
}

// Attempt states.
const (
	AttemptLaunching = "launching" // placement being sought; no cluster yet
	AttemptStarting  = "starting"  // cluster up; wrapper being started
	AttemptRunning   = "running"   // wrapper started on every node
	AttemptEnded     = "ended"
)

const terminalSQL = `('SUCCEEDED','CANCELLED','FAILED','FAILED_SETUP','FAILED_PRECHECKS','FAILED_NO_RESOURCE','FAILED_CONTROLLER')`
