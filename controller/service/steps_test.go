package service

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
	"sortie/strategy/clocktest"
)

func intp(n int) *int { return &n }

// TestFollowSaysEachStepFromTheStore moves a job through the steps the
// controller records, as it records them, and checks what a follow says
// at each look: each step once, in order, and the back-off's wait from the
// service's clock.
func TestFollowSaysEachStepFromTheStore(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	clock := clocktest.New(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	s.Now = clock.Now
	root := project(t, map[string]string{"t.yaml": "resources:\n  job_recovery:\n    max_restarts_on_errors: 2\nsetup: pip install -r req.txt\nrun: train\n"})
	v, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	st := newStepper(func(text string) { said = append(said, text) })
	look := func(want ...string) {
		t.Helper()
		said = nil
		j, err := s.Store.Job(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		as, err := s.Store.Attempts(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.step(ctx, st, j, as, len(as)); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, said); diff != "" {
			t.Errorf("said (-want +got):\n%s", diff)
		}
	}
	look() // submitted: nothing yet
	a, err := s.Store.NewAttempt(ctx, v.ID, 0, func(int) string { return "sortie-1-0-1" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.SetPlacement(ctx, a.ID, "sim", "sim-east", "sim-east-a", "", store.Billing{}); err != nil {
		t.Fatal(err)
	}
	look("Attempt 1: placement chosen: sim/sim-east/sim-east-a, on-demand.",
		"Attempt 1: requesting 1 instance there for cluster sortie-1-0-1.")
	if err := s.Store.RecordLaunchTry(ctx, store.LaunchTry{JobID: v.ID, Attempt: 1, Cloud: "sim", Region: "sim-east", Zone: "sim-east-a",
		Class: "capacity", Message: "no capacity in sim-east-a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.SetPlacement(ctx, a.ID, "sim", "sim-east", "sim-east-b", "", store.Billing{}); err != nil {
		t.Fatal(err)
	}
	look("Attempt 1: the launch in sim/sim-east/sim-east-a failed (capacity): no capacity in sim-east-a.",
		"Attempt 1: placement chosen: sim/sim-east/sim-east-b, on-demand.",
		"Attempt 1: requesting 1 instance there for cluster sortie-1-0-1.")
	// sim-east-b has no capacity either: the job waits for the next round,
	// which tries sim-east-a again.
	if err := s.Store.RecordLaunchTry(ctx, store.LaunchTry{JobID: v.ID, Attempt: 1, Cloud: "sim", Region: "sim-east", Zone: "sim-east-b",
		Class: "capacity", Message: "no capacity in sim-east-b"}); err != nil {
		t.Fatal(err)
	}
	round := clock.Now().Add(30 * time.Second)
	if err := s.Store.SetWaiting(ctx, v.ID, 0, "no placement has capacity; the next round of launch tries is in 30s", &round, 1); err != nil {
		t.Fatal(err)
	}
	look("Attempt 1: the launch in sim/sim-east/sim-east-b failed (capacity): no capacity in sim-east-b.",
		"Attempt 1: no placement has capacity; the next round of launch tries is in 30s.")
	clock.Advance(30 * time.Second)
	if err := s.Store.SetPlacement(ctx, a.ID, "sim", "sim-east", "sim-east-a", "", store.Billing{}); err != nil {
		t.Fatal(err)
	}
	look("Attempt 1: placement chosen: sim/sim-east/sim-east-a, on-demand.",
		"Attempt 1: requesting 1 instance there for cluster sortie-1-0-1.")
	if err := s.Store.SetStatusReason(ctx, v.ID, "waiting for SSH on node 0: connection refused, try 1"); err != nil {
		t.Fatal(err)
	}
	look("Attempt 1: waiting for SSH on node 0: connection refused, try 1.")
	look() // nothing new
	if err := s.Store.MarkLaunched(ctx, a.ID, "sim", "sim-east", "sim-east-a", []string{"sim-1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.SetStatusReason(ctx, v.ID, ""); err != nil {
		t.Fatal(err)
	}
	look("Attempt 1: cluster sortie-1-0-1 is up (sim-1); starting the task.")
	a.State = lifecycle.AttemptStarting
	if err := s.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	look("Attempt 1: setup started on 1 node.")
	look()
	if err := s.Store.MarkRunStarted(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	look("Attempt 1: run started on 1 node.")
	next := clock.Now().Add(8 * time.Second)
	d := strategy.Decision{Action: strategy.Restart, Counters: strategy.Counters{RestartsOnErrors: 1},
		Reason: "exit code 1 is a failure: restart on error 1 of 2"}
	if err := s.Store.EndAttempt(ctx, a, store.Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{intp(1)}}, d,
		store.Facts{NextActionAt: &next}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(500 * time.Millisecond)
	look("Attempt 1 ended: user_failure, exit codes 1; exit code 1 is a failure: restart on error 1 of 2.",
		"Restarting in 8s (back-off 1; restarts on error left 1 of 2).")
	look()
	// The restart runs on the same cluster: nothing is placed or launched.
	as, err := s.Store.Attempts(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(8 * time.Second)
	if _, err := s.Store.NewAttempt(ctx, v.ID, 0, func(int) string { return "sortie-1-0-2" }, as[0], lifecycle.Recovering); err != nil {
		t.Fatal(err)
	}
	look("Attempt 2: the task starts again on cluster sortie-1-0-1 (sim-1).")
}

// TestLogsFollowSaysTheSteps: a follow that asks for the steps gets them
// beside the log; one that does not gets none.
func TestLogsFollowSaysTheSteps(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": "run: train\n"})
	v, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Store.NewAttempt(ctx, v.ID, 0, func(int) string { return "c1" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkLaunched(ctx, a.ID, "sim", "sim-east", "sim-east-a", []string{"sim-1"}); err != nil {
		t.Fatal(err)
	}
	a.State = lifecycle.AttemptStarting
	if err := s.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	d := strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Reason: "the task succeeded"}
	if err := s.Store.EndAttempt(ctx, a, store.Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{intp(0)}}, d, store.Facts{}); err != nil {
		t.Fatal(err)
	}
	var said []string
	var out strings.Builder
	if err := s.Logs(ctx, contract.LogsRequest{ID: v.ID, Follow: true, FromStart: true, Step: func(s string) { said = append(said, s) }}, &out); err != nil {
		t.Fatal(err)
	}
	want := []string{"Attempt 1: placement chosen: sim/sim-east/sim-east-a, on-demand.",
		"Attempt 1: requesting 1 instance there for cluster c1.",
		"Attempt 1: cluster c1 is up (sim-1); starting the task.",
		"Attempt 1: run started on 1 node.",
		"Attempt 1 ended: succeeded, exit codes 0; the task succeeded."}
	if diff := cmp.Diff(want, said); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// A placement is spot when the task, or the any_of item of its cloud and
// region, asks for spot.
func TestSpotText(t *testing.T) {
	for _, tc := range []struct {
		yaml, cloud, region, want string
	}{
		{"run: x\n", "aws", "us-east-1", "on-demand"},
		{"resources: {use_spot: true}\nrun: x\n", "aws", "us-east-1", "spot"},
		{"resources: {any_of: [{cloud: aws, use_spot: true}, {cloud: gcp}]}\nrun: x\n", "aws", "us-east-1", "spot"},
		{"resources: {any_of: [{cloud: aws, use_spot: true}, {cloud: gcp}]}\nrun: x\n", "gcp", "us-central1", "on-demand"},
		{"resources: {ordered: [{region: us-west-2, use_spot: true}, {region: us-east-1}]}\nrun: x\n", "aws", "us-east-1", "on-demand"},
	} {
		p, err := schema.Parse([]byte(tc.yaml), clouds.Schema())
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if got := spotText(p.Tasks[0], tc.cloud, tc.region); got != tc.want {
			t.Errorf("%s on %s/%s: %s, want %s", tc.yaml, tc.cloud, tc.region, got, tc.want)
		}
	}
}

// An attempt whose decision is its reason (a start that fails prechecks
// ends the job with the error it ended on) is said with the reason once.
func TestFollowSaysAReasonThatIsTheDecisionOnce(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": "run: train\n"})
	v, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Store.NewAttempt(ctx, v.ID, 0, func(int) string { return "sortie-1-0-1" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	why := "node 0: resources.image_id docker:x: no container engine on the node"
	if err := s.Store.EndAttempt(ctx, a, store.Observed{Outcome: strategy.LaunchFailed, Reason: why},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.FailedPrechecks, Rule: strategy.RulePrechecks, Reason: why}, store.Facts{}); err != nil {
		t.Fatal(err)
	}
	j, err := s.Store.Job(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	as, err := s.Store.Attempts(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	if err := s.step(ctx, newStepper(func(text string) { said = append(said, text) }), j, as, len(as)); err != nil {
		t.Fatal(err)
	}
	want := "Attempt 1 ended: launch_failed (" + why + ")."
	if !slices.Contains(said, want) {
		t.Errorf("said %q, want %q", said, want)
	}
}

// A follow says an attempt's end after the attempt's log, not before its
// last lines: the steps and the log are one story on a terminal.
func TestFollowSaysAnAttemptsEndAfterItsLog(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": "run: train\n"})
	v, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Store.NewAttempt(ctx, v.ID, 0, func(int) string { return "c1" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkLaunched(ctx, a.ID, "sim", "sim-east", "sim-east-a", []string{"sim-1"}); err != nil {
		t.Fatal(err)
	}
	a.State = lifecycle.AttemptStarting
	if err := s.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	d := strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Reason: "the task succeeded"}
	if err := s.Store.EndAttempt(ctx, a, store.Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{intp(0)}}, d, store.Facts{}); err != nil {
		t.Fatal(err)
	}
	kept := home.NodeLog(s.Home, v.ID, 0, 1, 0)
	if err := os.MkdirAll(filepath.Dir(kept), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kept, []byte("step 1\nstep 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// One story: each step and each write of the log, in the order said.
	var story []string
	out := writerFunc(func(b []byte) (int, error) {
		if len(b) > 0 {
			story = append(story, "log: "+string(b))
		}
		return len(b), nil
	})
	if err := s.Logs(ctx, contract.LogsRequest{ID: v.ID, Follow: true, FromStart: true, Step: func(s string) { story = append(story, "step: "+s) }}, out); err != nil {
		t.Fatal(err)
	}
	end := slices.IndexFunc(story, func(s string) bool { return strings.HasPrefix(s, "step: Attempt 1 ended") })
	lastLog := -1
	for i, s := range story {
		if strings.HasPrefix(s, "log: ") {
			lastLog = i
		}
	}
	if end < 0 || lastLog < 0 || end < lastLog {
		t.Errorf("the attempt's end is said before its log is printed whole:\n%s", strings.Join(story, "\n"))
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
