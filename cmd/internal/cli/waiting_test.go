package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
)

// A job waiting under the limits shows its place and reason: in the
// queue's WAITING column, and in jobs show with its priority.
func TestWaitingJobsShowPlaceAndReason(t *testing.T) {
	str := func(s string) *string { return &s }
	two := 2
	running := contract.JobView{ID: 1, Name: "big", Status: "RUNNING", NumTasks: 1, SubmittedAt: time.Now(), Priority: 500}
	waiting := contract.JobView{ID: 2, Name: "small", Status: "PENDING", NumTasks: 1, SubmittedAt: time.Now(), Priority: 900,
		WaitReason: str("waiting: alice holds 16 of 16 A100 (user limit)"), QueuePlace: &two}
	f, out, _ := testFactory()
	if err := printQueue(f, []contract.JobView{running, waiting}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(strings.TrimSpace(lines[0]), "WAITING") ||
		!strings.HasSuffix(lines[1], " -") || !strings.HasSuffix(lines[2], "#2 alice holds 16 of 16 A100 (user limit)") {
		t.Errorf("queue:\n%s\nwant a WAITING column: - for the running job, the place and reason for the waiting one", out)
	}
	f, out, _ = testFactory()
	if err := printShow(f, &contract.JobDetail{JobView: waiting}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Waiting:       #2 alice holds 16 of 16 A100 (user limit)\n", "Priority:      900\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show:\n%s\nwant %q", out, want)
		}
	}
	// Without waiting jobs the queue has no WAITING column.
	f, out, _ = testFactory()
	printQueue(f, []contract.JobView{running})
	if strings.Contains(out.String(), "WAITING") {
		t.Errorf("queue without waiting jobs:\n%s", out)
	}
}

// priorityFake answers `jobs priority` as a service would, remembering
// what it was asked.
type priorityFake struct {
	Service
	id       int64
	priority int
	err      error
}

func (s *priorityFake) SetPriority(_ context.Context, id int64, n int) (*contract.PriorityView, error) {
	s.id, s.priority = id, n
	if s.err != nil {
		return nil, s.err
	}
	return &contract.PriorityView{JobID: id, Priority: n, Previous: 500}, nil
}
func (s *priorityFake) Close() error { return nil }

// `jobs priority ID N` asks the service, says what changed (or prints the
// JSON), refuses a bad id or priority as a usage error without asking,
// and passes on the service's refusals with their message.
func TestJobsPriority(t *testing.T) {
	run := func(fake *priorityFake, argv ...string) (int, string, string) {
		f, out, errb := testFactory()
		f.Service = func(context.Context) (Service, error) { return fake, nil }
		return Execute(f, append([]string{"jobs", "priority"}, argv...)), out.String(), errb.String()
	}
	fake := &priorityFake{}
	if code, out, _ := run(fake, "14", "800"); code != 0 || fake.id != 14 || fake.priority != 800 || out != "Job 14's priority: 500 -> 800.\n" {
		t.Errorf("priority 14 800: exit %d, asked %d %d, printed %q", code, fake.id, fake.priority, out)
	}
	if code, out, _ := run(&priorityFake{}, "14", "0", "-o", "json"); code != 0 || !strings.Contains(out, `"previous": 500`) || !strings.Contains(out, `"priority": 0`) {
		t.Errorf("-o json: exit %d %q", code, out)
	}
	for _, argv := range [][]string{{"14", "1001"}, {"14", "high"}, {"x", "5"}, {"14"}, {"14", "5", "-o", "yaml"}} {
		fake := &priorityFake{}
		if code, _, errs := run(fake, argv...); code != ExitUsage || fake.id != 0 {
			t.Errorf("priority %v: exit %d (%s), asked job %d; want a usage error, nothing asked", argv, code, errs, fake.id)
		}
	}
	refused := fmt.Errorf("job 14 is RUNNING: %w", contract.ErrNotWaiting)
	if code, _, errs := run(&priorityFake{err: refused}, "14", "1"); code != ExitFailed || !strings.Contains(errs, "job 14 is RUNNING: only a job waiting to start can change its priority") {
		t.Errorf("a running job: exit %d, %q", code, errs)
	}
}
