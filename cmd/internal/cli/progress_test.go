package cli

import (
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
)

// jobs show gives each attempt's progress once some attempt reported any,
// and leaves the column out otherwise.
func TestShowGivesTheProgressPerAttempt(t *testing.T) {
	n := int64(41200)
	ended := "ended"
	attempts := []contract.AttemptView{
		{Attempt: 1, State: "ended", Outcome: &ended, StartedAt: time.Now()},
		{Attempt: 2, State: "running", StartedAt: time.Now(), Progress: &n},
	}
	f, out, _ := testFactory()
	if err := printShow(f, &contract.JobDetail{JobView: contract.JobView{ID: 1, Status: "RUNNING"}, Attempts: attempts}); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "  TASK") || strings.HasPrefix(line, "  0 ") {
			rows = append(rows, strings.Join(strings.Fields(line), " "))
		}
	}
	const header = "TASK ATTEMPT WHERE STARTED DURATION OUTCOME EXIT CODES PROGRESS DECISION"
	if len(rows) != 3 || rows[0] != header || !strings.HasSuffix(rows[1], " - -") || !strings.Contains(rows[2], " 41200 ") {
		t.Errorf("attempts table:\n%s\nwant a PROGRESS column, - for attempt 1 and 41200 for attempt 2", strings.Join(rows, "\n"))
	}

	f, out, _ = testFactory()
	attempts[1].Progress = nil
	if err := printShow(f, &contract.JobDetail{JobView: contract.JobView{ID: 1, Status: "RUNNING"}, Attempts: attempts}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "PROGRESS") {
		t.Errorf("a job without progress shows a PROGRESS column:\n%s", out)
	}
}

// jobs show gives each attempt's checkpoint (the newest object of its
// MOUNT_CACHED buckets) once some attempt has one.
func TestShowGivesTheCheckpointPerAttempt(t *testing.T) {
	n := int64(7)
	ended := "ended"
	at := time.Date(2026, 3, 1, 14, 2, 10, 0, time.UTC)
	attempts := []contract.AttemptView{
		{Attempt: 1, State: "ended", Outcome: &ended, StartedAt: time.Now(), Progress: &n},
		{Attempt: 2, State: "ended", Outcome: &ended, StartedAt: time.Now(), Checkpoint: &contract.CheckpointView{Key: "s3://ckpts/run/step-900.pt", Modified: at}},
	}
	f, out, _ := testFactory()
	if err := printShow(f, &contract.JobDetail{JobView: contract.JobView{ID: 1, Status: "RUNNING"}, Attempts: attempts}); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "  TASK") || strings.HasPrefix(line, "  0 ") {
			rows = append(rows, strings.Join(strings.Fields(line), " "))
		}
	}
	const header = "TASK ATTEMPT WHERE STARTED DURATION OUTCOME EXIT CODES PROGRESS CHECKPOINT DECISION"
	if len(rows) != 3 || rows[0] != header || !strings.Contains(rows[1], " 7 - -") || !strings.Contains(rows[2], " - step-900.pt 14:02:10 -") {
		t.Errorf("attempts table:\n%s\nwant a CHECKPOINT column, - for attempt 1 and step-900.pt 14:02:10 for attempt 2", strings.Join(rows, "\n"))
	}
}

// The dry run's plan says the limit on restarts without progress.
func TestPlanSaysTheProgressLimit(t *testing.T) {
	three := 3
	got := planLimits(contract.TaskPlan{MaxRestartsWithoutProgress: &three})
	if got != "max_restarts_without_progress 3" {
		t.Errorf("planLimits = %q, want %q", got, "max_restarts_without_progress 3")
	}
}
