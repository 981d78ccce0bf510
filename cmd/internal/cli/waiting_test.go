package cli

import (
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
