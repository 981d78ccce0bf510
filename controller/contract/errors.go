package contract

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"sortie/controller/lifecycle"
)

// UsageError is bad input from the user: exit status 2, nothing stored.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

// KnownFailureError refuses inputs that already failed: exit status 3.
type KnownFailureError struct {
	// Failure is the known failure, as `jobs failures` lists it.
	Failure *FailureView
	// Grown is the size the failed attempt had escalated to, as the
	// message writes it ("memory 32 GB"); empty for the task's own.
	Grown string
	Now   time.Time
	// Asker is who launched; a failure of another user's job names them.
	Asker string
}

func (e *KnownFailureError) Error() string {
	f := e.Failure
	logs := fmt.Sprintf("See `sortie jobs logs %d`.", f.JobID)
	if f.LogsRemovedAt != nil {
		logs = fmt.Sprintf("Its logs were removed %s ago (controller.log_retention); `sortie jobs show %d` has its attempts and exit codes.",
			Age(e.Now.Sub(*f.LogsRemovedAt)), f.JobID)
	}
	at := ""
	if e.Grown != "" {
		// The job escalated: say how big it had grown when it failed.
		at = " at " + e.Grown
	}
	if f.Verdict == VerdictDeterministic && len(f.Evidence) == 2 {
		// Run again elsewhere, it failed the same way.
		at += fmt.Sprintf(", twice: in %s and in %s", evidencePlace(f.Evidence[0]), evidencePlace(f.Evidence[1]))
	}
	whose := ""
	if f.Owner != nil && *f.Owner != "" && *f.Owner != e.Asker {
		whose = *f.Owner + "'s "
	}
	return fmt.Sprintf("These inputs already failed in %sjob %d (%s%s, %s ago); nothing has changed since. "+
		"%s To run it anyway: --retry-failed.",
		whose, f.JobID, describeCodes(f.Status, f.ExitCodes), at, Age(e.Now.Sub(f.RecordedAt)), logs)
}

func describeCodes(status lifecycle.Status, codes []*int) string {
	var known []string
	for _, c := range codes {
		if c != nil && *c != 0 {
			known = append(known, fmt.Sprint(*c))
		}
	}
	what := "exit code"
	if status == lifecycle.FailedSetup {
		what = "setup exit code"
	}
	switch len(known) {
	case 0:
		return strings.ToLower(string(status))
	case 1:
		return what + " " + known[0]
	}
	return what + "s " + strings.Join(known, ", ")
}

// ErrNoSuchJob is returned for an id that names no job.
var ErrNoSuchJob = errors.New("no such job")

// ErrLogNotKept is returned, after what was kept is printed, when a node's
// log of an ended attempt could not be kept (the node was gone, or did not
// answer in time).
var ErrLogNotKept = errors.New("log not kept")

// ErrLogsRemoved is returned, after saying when and why, for a job whose
// kept logs the controller removed (controller.log_retention).
var ErrLogsRemoved = errors.New("logs removed")

// ErrNoAttempt is returned when the job has no attempt to show logs of.
var ErrNoAttempt = fmt.Errorf("no such attempt")

// ForbiddenError refuses a cancel, retry or forget of a job its asker does
// not own: only the owner or an admin may.
type ForbiddenError struct {
	Job   int64  `json:"job"`
	Owner string `json:"owner"`
	// Verb is what was refused: cancel, retry, forget, release or ssh.
	Verb string `json:"verb"`
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("job %d belongs to %s: only %s or an admin may %s it", e.Job, e.Owner, e.Owner, e.Verb)
}

// Errors of `jobs ssh` and `jobs release` about the job's kept cluster.
var (
	// ErrJobRunning: the job has not ended, so nothing is kept yet.
	ErrJobRunning = errors.New("the job is still running")
	// ErrNotKept: the job kept no cluster.
	ErrNotKept = errors.New("its cluster was not kept")
	// ErrReleased: the kept cluster is gone.
	ErrReleased = errors.New("its kept cluster was already released")
)

// ErrNotWaiting refuses `jobs priority` of a job that no longer waits to
// start: its priority orders only waiting jobs.
var ErrNotWaiting = errors.New("only a job waiting to start can change its priority")

// ErrBusy is a write that waited too long for another's lock on the
// store: the server answers busy (503), and the request may be sent again.
var ErrBusy = errors.New("the store is busy")

// BudgetError refuses a launch whose owner has spent their monthly budget:
// exit status 4.
type BudgetError struct {
	// User is the owner whose budget is spent.
	User string
	// Spent is what their jobs cost this calendar month (UTC), Budget
	// their monthly budget, in dollars; Estimate says a price in Spent was
	// stale or not known, or an attempt still runs.
	Spent, Budget float64
	Estimate      bool
	// Month is the month counted, "2026-12".
	Month string
}

func (e *BudgetError) Error() string {
	approx := ""
	if e.Estimate {
		approx = "~"
	}
	return fmt.Sprintf("%s has spent %s$%.2f of their monthly budget of $%.2f (%s, UTC); no job of theirs launches until the month ends "+
		"or an admin raises it (`sortie server users budget %s DOLLARS`).", e.User, approx, e.Spent, e.Budget, e.Month, e.User)
}
