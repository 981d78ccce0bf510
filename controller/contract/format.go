package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Waiting is a waiting job's place and why it waits, the one way the
// queue, `jobs show` and the dashboard say it: "#3 the server's 64 A100
// are in use; 2 jobs ahead of this one"; "-" when it does not wait.
func Waiting(j JobView) string {
	if j.WaitReason == nil {
		return "-"
	}
	reason := strings.TrimPrefix(*j.WaitReason, "waiting: ")
	if j.QueuePlace == nil {
		return reason
	}
	return "#" + strconv.Itoa(*j.QueuePlace) + " " + reason
}

// Age says how long d is the one way sortie shows it, in messages and
// tables: "1 second", "5 minutes", "3 hours" (under two days), "4 days".
func Age(d time.Duration) string {
	n, unit := int(d.Hours()/24), "day"
	switch {
	case d < time.Minute:
		n, unit = int(d.Seconds()), "second"
	case d < time.Hour:
		n, unit = int(d.Minutes()), "minute"
	case d < 48*time.Hour:
		n, unit = int(d.Hours()), "hour"
	}
	n = max(n, 0)
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%d %s", n, unit)
}

// Elapsed is how long something that began at start ran, until end or,
// while it runs, until now, the one way sortie's tables and pages show
// it: "45s", "3m 2s", "1h 0m 5s"; "-" when it has not begun.
func Elapsed(start, end *time.Time, now time.Time) string {
	if start == nil {
		return "-"
	}
	stop := now
	if end != nil {
		stop = *end
	}
	d := max(stop.Sub(*start).Round(time.Second), 0)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh %dm %ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// RestartsLeft says how many of a task's max_restarts_on_errors are left
// after restarts failures counted against them: "restarts on error left 1
// of 2". A task that failed for good counts one more failure than it
// restarted, so what is left is never below 0.
func RestartsLeft(restarts, maxRestarts int) string {
	return fmt.Sprintf("restarts on error left %d of %d", max(maxRestarts-restarts, 0), maxRestarts)
}

// String writes an override's change the one way the CLI and the
// dashboard show it, "envs.SEED: (unset) → 7": a value that is empty (a
// field the task left out, or one the retry removes) is "(unset)".
func (o Override) String() string {
	return fmt.Sprintf("%s: %s → %s", o.Path, orUnset(o.Old), orUnset(o.New))
}

func orUnset(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}

// Cost shows dollars the one way sortie's tables and pages do: "$12.40",
// "~$3.10" for an estimate, "-" when not known.
func Cost(dollars *float64, estimate bool) string {
	if dollars == nil {
		return "-"
	}
	// strconv, not fmt: a queue formats one per job.
	b := make([]byte, 0, 16)
	if estimate {
		b = append(b, '~')
	}
	b = append(b, '$')
	return string(strconv.AppendFloat(b, *dollars, 'f', 2, 64))
}
