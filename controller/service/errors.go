package service

import (
	"fmt"
	"strings"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
)

// UsageError is bad input from the user: exit status 2, nothing stored.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// KnownFailureError refuses inputs that already failed: exit status 3.
type KnownFailureError struct {
	Failure *store.KnownFailure
	Now     time.Time
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
	if f.Size != nil && !f.Size.IsZero() {
		// The job escalated: say how big it had grown when it failed.
		at = " at " + f.Size.String()
	}
	whose := ""
	if f.Owner != "" && f.Owner != e.Asker {
		whose = f.Owner + "'s "
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
