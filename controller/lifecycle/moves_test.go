package lifecycle

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// allowedJobMoves is the job table written out again: changing a move means
// changing it here too, on purpose.
var allowedJobMoves = []string{
	"PENDING → STARTING", "PENDING → RUNNING", "PENDING → RECOVERING", "PENDING → CANCELLING",
	"PENDING → CANCELLED", "PENDING → FAILED", "PENDING → FAILED_PRECHECKS", "PENDING → FAILED_NO_RESOURCE", "PENDING → FAILED_CONTROLLER",

	"STARTING → PENDING", "STARTING → RUNNING", "STARTING → RECOVERING", "STARTING → CANCELLING",
	"STARTING → CANCELLED", "STARTING → FAILED", "STARTING → FAILED_PRECHECKS", "STARTING → FAILED_NO_RESOURCE", "STARTING → FAILED_CONTROLLER",

	"RUNNING → PENDING", "RUNNING → STARTING", "RUNNING → RECOVERING", "RUNNING → CANCELLING",
	"RUNNING → SUCCEEDED", "RUNNING → CANCELLED", "RUNNING → FAILED", "RUNNING → FAILED_SETUP", "RUNNING → FAILED_CONTROLLER",

	"RECOVERING → PENDING", "RECOVERING → RUNNING", "RECOVERING → CANCELLING",
	"RECOVERING → CANCELLED", "RECOVERING → FAILED", "RECOVERING → FAILED_PRECHECKS", "RECOVERING → FAILED_NO_RESOURCE", "RECOVERING → FAILED_CONTROLLER",

	"CANCELLING → SUCCEEDED", "CANCELLING → CANCELLED", "CANCELLING → FAILED", "CANCELLING → FAILED_SETUP",
	"CANCELLING → FAILED_PRECHECKS", "CANCELLING → FAILED_NO_RESOURCE", "CANCELLING → FAILED_CONTROLLER",
}

var allowedAttemptMoves = []string{
	"launching → starting", "launching → ended",
	"starting → running", "starting → ended",
	"running → ended",
}

func TestTablesAreTheMovesWrittenHere(t *testing.T) {
	var jobs, attempts []string
	for _, m := range JobMoves() {
		jobs = append(jobs, m.String())
	}
	for _, m := range AttemptMoves() {
		attempts = append(attempts, m.String())
	}
	if diff := cmp.Diff(allowedJobMoves, jobs); diff != "" {
		t.Errorf("job moves (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(allowedAttemptMoves, attempts); diff != "" {
		t.Errorf("attempt moves (-want +got):\n%s", diff)
	}
}

// TestJobMoves has one case per allowed move and one per forbidden move:
// every other pair of statuses.
func TestJobMoves(t *testing.T) {
	allowed := map[string]bool{}
	for _, m := range allowedJobMoves {
		allowed[m] = true
	}
	type tc struct {
		from, to Status
		want     error // nil, ErrTerminal or ErrNotAMove
	}
	var cases []tc
	for _, from := range Statuses() {
		for _, to := range Statuses() {
			m := Move{from, to}.String()
			switch {
			case from.Terminal():
				cases = append(cases, tc{from, to, ErrTerminal})
			case from == to, allowed[m]:
				cases = append(cases, tc{from, to, nil})
			default:
				cases = append(cases, tc{from, to, ErrNotAMove})
			}
		}
	}
	if n := len(Statuses()); len(cases) != n*n {
		t.Fatalf("%d cases for %d statuses", len(cases), n)
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s→%s", c.from, c.to), func(t *testing.T) {
			err := CheckJob(12, c.from, c.to)
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("refused an allowed move: %v", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("got %v, want an error wrapping %q", err, c.want)
			}
			if c.want == ErrNotAMove {
				want := fmt.Sprintf("job 12: %s → %s is not a move a job makes", c.from, c.to)
				if err.Error() != want {
					t.Errorf("error %q, want %q", err, want)
				}
				var me *MoveError
				if !errors.As(err, &me) || me.From != string(c.from) || me.To != string(c.to) {
					t.Errorf("error %#v is not the MoveError of the move", err)
				}
			}
			// A task moves by the same table.
			terr := CheckTask(12, 1, c.from, c.to)
			if (terr == nil) != (err == nil) || (terr != nil && !errors.Is(terr, c.want)) {
				t.Errorf("task: %v; job: %v", terr, err)
			}
		})
	}
}

func TestAttemptMoves(t *testing.T) {
	allowed := map[string]bool{}
	for _, m := range allowedAttemptMoves {
		allowed[m] = true
	}
	for _, from := range AttemptStates() {
		for _, to := range AttemptStates() {
			err := CheckAttempt(12, 0, 2, from, to)
			m := AttemptMove{from, to}.String()
			switch {
			case from == AttemptEnded:
				if !errors.Is(err, ErrAttemptEnded) {
					t.Errorf("%s: got %v, want ErrAttemptEnded", m, err)
				}
			case from == to, allowed[m]:
				if err != nil {
					t.Errorf("%s refused: %v", m, err)
				}
			default:
				want := fmt.Sprintf("job 12 task 0 attempt 2: %s is not a move an attempt makes", m)
				if !errors.Is(err, ErrNotAMove) || err.Error() != want {
					t.Errorf("%s: got %v, want %q", m, err, want)
				}
			}
		}
	}
}

func TestUnknownStatusesNeverMove(t *testing.T) {
	for _, c := range []struct{ from, to Status }{{"", Pending}, {"BOGUS", "BOGUS"}, {Pending, ""}, {Running, "running"}} {
		if err := CheckJob(1, c.from, c.to); !errors.Is(err, ErrNotAMove) {
			t.Errorf("%q → %q: got %v, want ErrNotAMove", c.from, c.to, err)
		}
	}
	if err := CheckAttempt(1, 0, 1, "", AttemptRunning); !errors.Is(err, ErrNotAMove) {
		t.Errorf("unknown attempt state moved: %v", err)
	}
}

// Every job can end from wherever it is: cancelled by the user, or failed
// by the controller; and every status is part of the table.
func TestEveryJobCanEnd(t *testing.T) {
	for _, s := range ActiveStatuses() {
		for _, end := range []Status{Cancelled, FailedController} {
			if err := CheckJob(1, s, end); err != nil {
				t.Errorf("%s cannot end %s: %v", s, end, err)
			}
		}
		if s != Cancelling {
			if err := CheckJob(1, s, Cancelling); err != nil {
				t.Errorf("%s cannot be cancelled: %v", s, err)
			}
		}
	}
	reached := map[Status]bool{Pending: true}
	for _, m := range JobMoves() {
		reached[m.To] = true
	}
	for _, s := range Statuses() {
		if !reached[s] {
			t.Errorf("no move reaches %s", s)
		}
	}
}

func TestStatusLists(t *testing.T) {
	all := Statuses()
	if len(all) != 12 || len(ActiveStatuses())+len(TerminalStatuses()) != len(all) {
		t.Fatalf("statuses: %v", all)
	}
	for _, s := range ActiveStatuses() {
		if s.Terminal() || !s.Valid() {
			t.Errorf("%s: terminal %v valid %v", s, s.Terminal(), s.Valid())
		}
	}
	for _, s := range TerminalStatuses() {
		if !s.Terminal() || !s.Valid() {
			t.Errorf("%s: terminal %v valid %v", s, s.Terminal(), s.Valid())
		}
	}
	if Status("running").Valid() || Status("").Valid() {
		t.Errorf("statuses are upper case and never empty")
	}
	// The lists are copies: a caller cannot change the definition.
	TerminalStatuses()[0] = Running
	if !Succeeded.Terminal() || Running.Terminal() {
		t.Errorf("changing a returned list changed the definition")
	}
}
