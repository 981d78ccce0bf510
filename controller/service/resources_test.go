package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// Each task's resources are written as `sky jobs queue` writes them.
func TestResourcesOf(t *testing.T) {
	for _, tc := range []struct {
		task schema.Task
		want string
	}{
		{schema.Task{NumNodes: 1, Resources: schema.Resources{Accelerators: map[string]int{"A100": 8}}}, "1x[A100:8]"},
		{schema.Task{NumNodes: 2, Resources: schema.Resources{CPUs: "4+", UseSpot: true}}, "2x[CPU:4+][Spot]"},
		{schema.Task{Resources: schema.Resources{InstanceType: "m6i.large", CPUs: "2"}}, "1x[m6i.large]"},
		{schema.Task{NumNodes: 1}, "1x[default]"},
		{schema.Task{NumNodes: 1, Resources: schema.Resources{Accelerators: map[string]int{"T4": 1, "L4": 2}}}, "1x[L4:2, T4:1]"},
		{schema.Task{NumNodes: 1, Resources: schema.Resources{AnyOf: []schema.Resources{
			{Accelerators: map[string]int{"A100": 8}, UseSpot: true}, {Accelerators: map[string]int{"H100": 8}, UseSpot: true},
			{Accelerators: map[string]int{"A100": 8}, UseSpot: true}}}}, "1x[A100:8, H100:8][Spot]"},
		{schema.Task{NumNodes: 1, Resources: schema.Resources{Ordered: []schema.Resources{{UseSpot: true}, {}}}}, "1x[default]"},
	} {
		if got := resourcesOf(&tc.task).String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.task.Resources, got, tc.want)
		}
	}
}

// An escalation's size is what the task asks for now.
func TestResourcesGrowWithTheEscalation(t *testing.T) {
	for _, tc := range []struct {
		task schema.Task
		size *strategy.Size
		want string
	}{
		{schema.Task{NumNodes: 2, Resources: schema.Resources{Accelerators: map[string]int{"L4": 1}, UseSpot: true}},
			&strategy.Size{Accelerators: map[string]int{"A100": 1}}, "2x[A100:1][Spot]"},
		{schema.Task{Resources: schema.Resources{InstanceType: "m6i.large"}}, &strategy.Size{CPUs: "8", Memory: "64"}, "1x[CPU:8]"},
		{schema.Task{Resources: schema.Resources{CPUs: "4"}}, &strategy.Size{Memory: "64"}, "1x[CPU:4]"},
		{schema.Task{Resources: schema.Resources{CPUs: "4"}}, nil, "1x[CPU:4]"},
	} {
		stored := storedResources(&tc.task)
		if got := viewResources(stored, tc.size); got == nil || *got != tc.want {
			t.Errorf("%s at %+v: %v, want %q", stored, tc.size, got, tc.want)
		}
	}
	for _, stored := range []string{"", "{", "{}"} {
		if got := viewResources(stored, nil); got != nil {
			t.Errorf("%q: %q, want none", stored, *got)
		}
	}
}

// The queue says what each job's current task asks for and where its
// newest placed attempt runs: nothing before it is placed.
func TestQueueShowsResourcesAndLocation(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	task := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(task, []byte("num_nodes: 2\nresources:\n  accelerators: A100:8\n  use_spot: true\nrun: train\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := s.Launch(ctx, contract.LaunchRequest{File: task})
	if err != nil {
		t.Fatal(err)
	}
	queue := func() contract.JobView {
		t.Helper()
		jobs, err := s.Queue(ctx, contract.QueueRequest{All: true})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("queue: %v, %v", jobs, err)
		}
		return jobs[0]
	}
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	got := queue()
	if diff := cmp.Diff([2]string{"2x[A100:8][Spot]", "<nil>"}, [2]string{str(got.Resources), str(got.Location)}); diff != "" {
		t.Errorf("before a placement (-want +got):\n%s", diff)
	}
	preemptedAttempt(t, s, j.ID, lifecycle.Starting, strategy.Policy{}, false)
	a, err := s.Store.NewAttempt(ctx, j.ID, 0, func(int) string { return "c2" }, nil, lifecycle.Recovering)
	if err != nil {
		t.Fatal(err)
	}
	// The new attempt is not placed yet: the last placement stands.
	if got := str(queue().Location); got != "aws/us-east-1a" {
		t.Errorf("location %s, want the last attempt's aws/us-east-1a", got)
	}
	if err := s.Store.SetPlacement(ctx, a.ID, "aws", "us-west-2", "", "", store.Billing{}); err != nil {
		t.Fatal(err)
	}
	if got := str(queue().Location); got != "aws/us-west-2" {
		t.Errorf("location %s, want the current attempt's region aws/us-west-2", got)
	}
	d, err := s.Show(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if str(d.Resources) != "2x[A100:8][Spot]" || str(d.Location) != "aws/us-west-2" {
		t.Errorf("show: resources %s, location %s", str(d.Resources), str(d.Location))
	}
}
