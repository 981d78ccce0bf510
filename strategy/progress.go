package strategy

import (
	"fmt"
	"strconv"
	"time"

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
	// Checkpoint is the newest checkpoint counted as progress (the zero
	// value while none was), CheckpointAttempt the attempt that wrote it.
	Checkpoint        Checkpoint
	CheckpointAttempt int
}

// Checkpoint is the newest object of a task's MOUNT_CACHED buckets when an
// attempt ended: a task that saves its state there shows its progress by
// saving it again.
type Checkpoint struct {
	// Key names it: s3://bucket/key or gs://bucket/key.
	Key      string
	Modified time.Time
}

// AttemptProgress is what the progress accounting needs of one ended
// attempt of a task.
type AttemptProgress struct {
	Attempt int
	// Progress is the highest number the attempt's nodes reported; nil
	// when none did.
	Progress *int64
	// Checkpoint is the newest object of the task's MOUNT_CACHED buckets
	// when the attempt ended; nil when none was seen. Started is when the
	// attempt began.
	Checkpoint *Checkpoint
	Started    time.Time
	// Restarted says the attempt's end restarted or recovered the task
	// (a Recover, Restart or Escalate decision).
	Restarted bool
}

// Progress is the progress rule: an attempt made progress when
//
//   - it reported a number above every number an earlier attempt of the
//     task reported (above zero for the first report), so that a task
//     resumed from a checkpoint and redoing steps it had done makes none
//     until it passes them; or
//   - the newest object of the task's MOUNT_CACHED buckets when it ended
//     was written during the attempt (modified after it started) and is
//     newer than any checkpoint counted before: it saved its state again.
//     An object older than the attempt (from an earlier job, or data
//     that was there) is none.
//
// It returns the state after the attempt, and whether it made progress.
func Progress(s ProgressState, a AttemptProgress) (ProgressState, bool) {
	made := false
	if a.Progress != nil && *a.Progress > s.Best {
		s.Best, s.BestAttempt = *a.Progress, a.Attempt
		made = true
	}
	if c := a.Checkpoint; c != nil && c.Modified.After(a.Started) && c.Modified.After(s.Checkpoint.Modified) {
		s.Checkpoint, s.CheckpointAttempt = *c, a.Attempt
		made = true
	}
	return s, made
}

// ProgressOf replays the progress accounting over a task's ended
// attempts, in order: each restart after an attempt that made progress
// starts the count again, each other restart adds one. An attempt that
// ended the task (no restart) adds nothing.
func ProgressOf(attempts []AttemptProgress) ProgressState {
	var s ProgressState
	for _, a := range attempts {
		var made bool
		s, made = Progress(s, a)
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
	s, made := Progress(c.Progress, AttemptProgress{Attempt: e.Attempt, Progress: e.Progress, Checkpoint: e.Checkpoint, Started: e.Started})
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
	switch {
	case s.BestAttempt == 0 && s.CheckpointAttempt == 0:
		return "no progress reported"
	case s.CheckpointAttempt > s.BestAttempt:
		return fmt.Sprintf("last checkpoint %s at attempt %d", s.Checkpoint.Key, s.CheckpointAttempt)
	}
	return fmt.Sprintf("last progress %d at attempt %d", s.Best, s.BestAttempt)
}
