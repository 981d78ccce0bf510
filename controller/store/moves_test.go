package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
)

// state is everything the store holds about one job.
type state struct {
	Job      *Job
	Tasks    []*Task
	Attempts []*Attempt
	Failures []*KnownFailure
}

func stateOf(t *testing.T, s *Store, id int64) state {
	t.Helper()
	ctx := context.Background()
	j, err := s.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := s.Tasks(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	as, err := s.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := s.KnownFailures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return state{j, tasks, as, fs}
}

// A change that would move a status in a way the lifecycle does not list
// is refused with the move named, and leaves the store as it was.
func TestForbiddenMovesAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// setup brings a new job to where the change is tried: a is its
		// open attempt.
		setup  func(t *testing.T, s *Store, a *Attempt)
		change func(s *Store, a *Attempt) error
		want   string
	}{
		{
			name:  "a running job does not wait for capacity",
			setup: running,
			change: func(s *Store, a *Attempt) error {
				next := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
				return s.SetWaiting(ctx, a.JobID, a.TaskIdx, "no capacity", &next, 3)
			},
			want: "job 1: RUNNING → PENDING is not a move a job makes",
		},
		{
			name:  "a job that never ran does not succeed",
			setup: func(*testing.T, *Store, *Attempt) {},
			change: func(s *Store, a *Attempt) error {
				return s.EndAttempt(ctx, End{Attempt: a, Outcome: "succeeded", ExitCodes: []*int{code(0)}, Action: "succeed",
					RecoveryCount: 4, TaskStatus: lifecycle.Succeeded, JobStatus: lifecycle.Succeeded, ClearKnownFailure: "k1",
					KnownFailure: &KnownFailure{InputKey: "k2", JobID: a.JobID, Status: lifecycle.Failed}})
			},
			want: "job 1: STARTING → SUCCEEDED is not a move a job makes",
		},
		{
			name: "a job being cancelled does not fail its setup before it ran",
			setup: func(t *testing.T, s *Store, a *Attempt) {
				if _, err := s.RequestCancel(ctx, []int64{a.JobID}); err != nil {
					t.Fatal(err)
				}
			},
			change: func(s *Store, a *Attempt) error {
				return s.EndAttempt(ctx, End{Attempt: a, Outcome: "setup_failure", Action: "fail",
					TaskStatus: lifecycle.FailedSetup, JobStatus: lifecycle.FailedSetup})
			},
			want: "job 1 task 0: STARTING → FAILED_SETUP is not a move a task makes",
		},
		{
			name:  "an attempt does not run before its cluster is up",
			setup: func(*testing.T, *Store, *Attempt) {},
			change: func(s *Store, a *Attempt) error {
				return s.MarkRunning(ctx, a)
			},
			want: "job 1 task 0 attempt 1: launching → running is not a move an attempt makes",
		},
		{
			name:  "a running attempt is not launched again",
			setup: running,
			change: func(s *Store, a *Attempt) error {
				return s.MarkLaunched(ctx, a.ID, "local", "local", "local-b", []string{"other"})
			},
			want: "job 1 task 0 attempt 1: running → starting is not a move an attempt makes",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTest(t)
			id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte(`{}`), InputKey: "k1"}, []NewTask{{}, {}})
			if err != nil {
				t.Fatal(err)
			}
			a, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
			if err != nil {
				t.Fatal(err)
			}
			tc.setup(t, s, a)
			if err := s.tx(ctx, func(tx *sql.Tx) error {
				return recordFailure(ctx, tx, &KnownFailure{InputKey: "k1", JobID: 99, Status: lifecycle.Failed}, time.Now())
			}); err != nil {
				t.Fatal(err)
			}
			before := stateOf(t, s, id)
			err = tc.change(s, a)
			if !errors.Is(err, ErrNotAMove) {
				t.Fatalf("got %v, want ErrNotAMove", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			if diff := cmp.Diff(before, stateOf(t, s, id)); diff != "" {
				t.Errorf("a refused change wrote (-before +after):\n%s", diff)
			}
		})
	}
}
