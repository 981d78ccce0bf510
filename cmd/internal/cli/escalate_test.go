package cli

import (
	"sortie/controller/contract"
	"strings"
	"testing"
	"time"
)

// jobs show says what an escalation chose: for the job, and in each
// attempt that asked for it.
func TestShowSaysTheEscalatedSize(t *testing.T) {
	s := func(v string) *string { return &v }
	f, out, _ := testFactory()
	size := &contract.SizeView{Memory: s("32+"), Accelerators: s("A100:1")}
	d := &contract.JobDetail{JobView: contract.JobView{ID: 1, Status: "RUNNING", Size: size},
		Tasks: []contract.TaskView{{Size: size}},
		Attempts: []contract.AttemptView{
			{Attempt: 1, State: "ended", Cloud: s("local"), Region: s("local"), Zone: s("local-a"), StartedAt: time.Now()},
			{Attempt: 2, State: "running", Cloud: s("local"), Region: s("local"), Zone: s("local-b"), Size: size, StartedAt: time.Now()},
		}}
	if err := printShow(f, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Escalated to:  memory 32 GB, accelerators A100:1\n",
		"local/local/local-b (memory 32 GB, accelerators A100:1)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show printed\n%s\nwant it to contain %q", out, want)
		}
	}
	if strings.Contains(out.String(), "local-a (") {
		t.Errorf("the first attempt, at the task's own size, shows a size:\n%s", out)
	}
}

// The dry run's plan says the task's limits and escalation.
func TestPlanSaysTheLimits(t *testing.T) {
	s := func(v string) *string { return &v }
	three := 3
	var out strings.Builder
	p := &contract.Plan{Name: "build", Tasks: []contract.TaskPlan{
		{Strategy: "EAGER_NEXT_REGION", MaxDuration: s("12h"), MaxRecoveries: &three,
			Escalate: &contract.EscalatePlan{OnExitCodes: []int{137}, Memory: s("2x"), MaxMemory: s("256"), CPUs: s("1.5x"),
				Accelerators: []string{"L4:1", "A100:1", "H100:2"}}},
		{Strategy: "NONE"},
	}}
	if err := printPlan(&out, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  Limits:      max_duration 12h, max_recoveries 3\n",
		"  Escalate:    on exit codes 137: memory 2x up to 256 GB, cpus 1.5x (no cap), accelerators L4:1 → A100:1 → H100:2\n",
		"  Limits:      none (no max_duration, no max_recoveries)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "Escalate:") != 1 {
		t.Errorf("a task without escalate shows one:\n%s", out.String())
	}
}
