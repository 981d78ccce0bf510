package store

import (
	"strings"

	"sortie/controller/lifecycle"
)

// The statuses in SQL, derived from the lifecycle's one definition of them.
var (
	// terminalSQL is the parenthesised list of terminal statuses, for
	// "status NOT IN "+terminalSQL.
	terminalSQL = sqlList(lifecycle.TerminalStatuses())
	// activeSQL selects unfinished jobs by listing their statuses, which the
	// jobs_status index serves; "NOT IN terminal" would read every job ever run.
	activeSQL = "status IN " + sqlList(lifecycle.ActiveStatuses())
)

// openSQL selects attempts that have not ended; the attempts_open index
// has the same condition.
const openSQL = "state <> '" + string(lifecycle.AttemptEnded) + "'"

func sqlList(ss []lifecycle.Status) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + string(s) + "'"
	}
	return "(" + strings.Join(q, ",") + ")"
}
