package cli

import (
	"context"
	"slices"
	"sortie/controller/contract"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cancelFake matches a fixed set of jobs and records what it cancelled.
type cancelFake struct {
	Service
	matches   []contract.JobView
	asked     contract.CancelRequest
	cancelled []int64
}

func (s *cancelFake) CancelTargets(_ context.Context, req contract.CancelRequest) ([]contract.JobView, error) {
	s.asked = req
	return s.matches, nil
}
func (s *cancelFake) Cancel(_ context.Context, req contract.CancelRequest) ([]int64, error) {
	s.cancelled = append(s.cancelled, req.IDs...)
	return req.IDs, nil
}
func (s *cancelFake) Close() error { return nil }

func runCancelCmd(t *testing.T, tty bool, stdin string, argv ...string) (*cancelFake, int, string, string) {
	t.Helper()
	f, out, errb := testFactory()
	f.In = strings.NewReader(stdin)
	f.IsTerminal = func() bool { return tty }
	sub := f.Now().Add(-time.Hour)
	fake := &cancelFake{matches: []contract.JobView{{ID: 3, Name: "sweep-1", Status: "RUNNING", SubmittedAt: sub}, {ID: 5, Name: "sweep-2", Status: "PENDING", SubmittedAt: sub}}}
	f.Service = func(context.Context) (Service, error) { return fake, nil }
	code := Execute(f, append([]string{"jobs", "cancel"}, argv...))
	return fake, code, out.String(), errb.String()
}

func TestCancelFlags(t *testing.T) {
	got, err := parse(t, NewCmdCancel, []string{"-n", "sweep-*", "--status", "running,pending", "--since", "2d", "--dry-run", "-y"})
	if err != nil {
		t.Fatal(err)
	}
	want := CancelOptions{FilterOptions: FilterOptions{Name: "sweep-*", Statuses: []string{"running", "pending"}, Since: "2d"}, DryRun: true, Yes: true, Output: "table"}
	if diff := cmp.Diff(want, *got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, argv := range [][]string{{"--status", "RUNNING", "--all"}, {"1", "--since", "1h"}, {"--all", "-o", "yaml"}} {
		if _, err := parse(t, NewCmdCancel, argv); exitCode(err) != ExitUsage {
			t.Errorf("cancel %v: exit %d, want 2", argv, exitCode(err))
		}
	}
}

func TestCancelByFilter(t *testing.T) {
	// The filter reaches the service as a filter, --since read against
	// the clock.
	fake, code, _, _ := runCancelCmd(t, false, "", "-n", "sweep-*", "--status", "running", "--since", "90m", "-y")
	if code != 0 || !slices.Equal(fake.cancelled, []int64{3, 5}) {
		t.Fatalf("exit %d, cancelled %v; want 0 and [3 5]", code, fake.cancelled)
	}
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-90 * time.Minute)
	if f := fake.asked.Filter; f.NameGlob != "sweep-*" || len(f.Statuses) != 1 || f.Statuses[0] != "RUNNING" || f.Since == nil || !f.Since.Equal(since) {
		t.Errorf("filter %+v, want sweep-*, RUNNING, since %s", f, since)
	}

	fake, code, out, errs := runCancelCmd(t, false, "", "--all", "--dry-run")
	if code != 0 || len(fake.cancelled) != 0 || !strings.Contains(errs, "Would cancel 2 job(s)") || !strings.Contains(out, "sweep-2") {
		t.Errorf("--dry-run: exit %d, cancelled %v, out %q, err %q; want the list and nothing cancelled", code, fake.cancelled, out, errs)
	}

	fake, code, _, errs = runCancelCmd(t, false, "y\n", "--all")
	if code != ExitUsage || len(fake.cancelled) != 0 || !strings.Contains(errs, "pass -y") {
		t.Errorf("no tty, no -y: exit %d, cancelled %v, err %q; want 2, nothing cancelled, and to be told to pass -y", code, fake.cancelled, errs)
	}

	fake, code, _, errs = runCancelCmd(t, true, "n\n", "--all")
	if code != ExitFailed || len(fake.cancelled) != 0 || !strings.Contains(errs, "Cancel 2 jobs (3, 5)? [y/N]") {
		t.Errorf("answered no: exit %d, cancelled %v, err %q", code, fake.cancelled, errs)
	}

	fake, code, out, _ = runCancelCmd(t, true, "y\n", "--all")
	if code != 0 || !slices.Equal(fake.cancelled, []int64{3, 5}) || !strings.Contains(out, "Cancelling job 5.") {
		t.Errorf("answered yes: exit %d, cancelled %v, out %q", code, fake.cancelled, out)
	}

	_, code, _, errs = runCancelCmd(t, false, "", "--since", "soon")
	if code != ExitUsage || !strings.Contains(errs, `--since: "soon" is neither a duration`) {
		t.Errorf("bad --since: exit %d, err %q", code, errs)
	}
}

// othersFake selects none of the caller's jobs and lists everyone's.
type othersFake struct {
	Service
	all    []contract.JobView
	listed contract.QueueRequest
}

func (s *othersFake) CancelTargets(context.Context, contract.CancelRequest) ([]contract.JobView, error) {
	return nil, nil
}
func (s *othersFake) Queue(_ context.Context, req contract.QueueRequest) ([]contract.JobView, error) {
	s.listed = req
	var out []contract.JobView
	for _, j := range s.all {
		if slices.Contains(req.Statuses, j.Status) {
			out = append(out, j)
		}
	}
	return out, nil
}
func (s *othersFake) Close() error { return nil }

// A cancel that selects none of the caller's jobs says whose unfinished
// jobs it left alone, per owner, rather than that there are none.
func TestCancelAllSaysWhoseJobsAreLeft(t *testing.T) {
	alice, carol := "alice", "carol"
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	all := []contract.JobView{
		{ID: 1, Name: "a", Owner: &alice, Status: "RUNNING", SubmittedAt: now.Add(-3 * time.Hour)},
		{ID: 2, Name: "b", Owner: &carol, Status: "PENDING", SubmittedAt: now.Add(-time.Minute)},
		{ID: 3, Name: "c", Owner: &carol, Status: "RECOVERING", SubmittedAt: now.Add(-time.Minute)},
		{ID: 4, Name: "d", Owner: &alice, Status: "SUCCEEDED", SubmittedAt: now.Add(-time.Minute)},
		{ID: 5, Name: "e", Status: "RUNNING", SubmittedAt: now.Add(-time.Minute)},
	}
	for _, tc := range []struct {
		argv []string
		jobs []contract.JobView
		want string
	}{
		{[]string{"--all"}, all[:1], "No unfinished job to cancel: none of yours (alice has 1).\n"},
		{[]string{"--all"}, all, "No unfinished job to cancel: none of yours (alice has 1, carol has 2, 1 from before owners).\n"},
		{[]string{"--since", "1h"}, all, "No unfinished job to cancel: none of yours (carol has 2, 1 from before owners).\n"},
		{[]string{"--status", "pending"}, all, "No unfinished job to cancel: none of yours (carol has 1).\n"},
		{[]string{"--all"}, all[3:4], "No unfinished job to cancel.\n"},
	} {
		f, _, errb := testFactory()
		fake := &othersFake{all: tc.jobs}
		f.Service = func(context.Context) (Service, error) { return fake, nil }
		if code := Execute(f, append([]string{"jobs", "cancel"}, tc.argv...)); code != 0 {
			t.Errorf("%v: exit %d, %s", tc.argv, code, errb)
		}
		if errb.String() != tc.want {
			t.Errorf("%v: %q, want %q", tc.argv, errb.String(), tc.want)
		}
	}
}
