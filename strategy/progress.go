package strategy

import (
	"fmt"
	"strconv"

	"sortie/controller/lifecycle"
)

// ProgressState is the progress accounting of a task's attempts so far:
// how many restarts in a row came after an attempt that made no progress,
// and the highest progress reported, by which attempt.
type ProgressState struct {
	// RestartsWithoutProgress counts the restarts and recoveries since
	// the last attempt that made progress (or since the first attempt).
	RestartsWithoutProgress int
	// Best is the highest progress any attempt reported; BestAttempt is
	// that attempt's number, 0 when no attempt reported any.
	Best        int64
	BestAttempt int
}

// AttemptProgress is what the progress accounting needs of one ended
// attempt of a task.
type AttemptProgress struct {
	Attempt int
	// Progress is the highest number the attempt's nodes reported; nil
	// when none did.
	Progress *int64
	// Restarted says the attempt's end restarted or recovered the task
	// (a Recover, Restart or Escalate decision).
	Restarted bool
}

// Progress is the progress rule: an attempt made progress when it
// reported a number above every number an earlier attempt of the task
// reported (above zero for the first report), so that a task resumed from
// a checkpoint and redoing steps it had done makes none until it passes
// them. It returns the state after the attempt, and whether it made
// progress.
func Progress(s ProgressState, attempt int, progress *int64) (ProgressState, bool) {
	if progress == nil || *progress <= s.Best {
		return s, false
	}
	s.Best, s.BestAttempt = *progress, attempt
	return s, true
}

// ProgressOf replays the progress accounting over a task's ended
// attempts, in order: each restart after an attempt that made progress
// starts the count again, each other restart adds one. An attempt that
// ended the task (no restart) adds nothing.
func ProgressOf(attempts []AttemptProgress) ProgressState {
	var s ProgressState
	for _, a := range attempts {
		var made bool
		s, made = Progress(s, a.Attempt, a.Progress)
		switch {
		case !a.Restarted:
		case made:
			s.RestartsWithoutProgress = 0
		default:
			s.RestartsWithoutProgress++
		}
	}
	return s
}

// crashLoop is rule 11: d restarts or recovers the task; with a limit on
// restarts without progress, one more such restart past it ends the job.
func crashLoop(p Policy, c Counters, e Ended, d Decision) Decision {
	if p.MaxRestartsWithoutProgress == nil {
		return d
	}
	s, made := Progress(c.Progress, e.Attempt, e.Progress)
	if made {
		s.RestartsWithoutProgress = 0
		d.Counters.Progress = s
		return d
	}
	s.RestartsWithoutProgress++
	if s.RestartsWithoutProgress <= *p.MaxRestartsWithoutProgress {
		d.Counters.Progress = s
		return d
	}
	n := c.Progress.RestartsWithoutProgress
	return Decision{Action: Fail, Counters: c, Status: lifecycle.Failed, Rule: RuleCrashLoop,
		Reason: fmt.Sprintf(reasonCrashLoop, restarts(n), lastProgress(c.Progress))}
}

func restarts(n int) string {
	if n == 1 {
		return "1 restart"
	}
	return strconv.Itoa(n) + " restarts"
}

func lastProgress(s ProgressState) string {
	if s.BestAttempt == 0 {
		return "no progress reported"
	}
	return fmt.Sprintf("last progress %d at attempt %d", s.Best, s.BestAttempt)
}
