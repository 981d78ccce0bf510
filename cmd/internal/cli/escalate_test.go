package cli

import (
	"strings"
	"testing"
	"time"

	"sortie/controller/service"
)

// jobs show says what an escalation chose: for the job, and in each
// attempt that asked for it.
func TestShowSaysTheEscalatedSize(t *testing.T) {
	s := func(v string) *string { return &v }
	f, out, _ := testFactory()
	size := &service.SizeView{Memory: s("32+"), Accelerators: s("A100:1")}
	d := &service.JobDetail{JobView: service.JobView{ID: 1, Status: "RUNNING", Size: size},
		Tasks: []service.TaskView{{Size: size}},
		Attempts: []service.AttemptView{
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
