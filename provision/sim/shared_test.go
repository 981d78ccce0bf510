package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy/clocktest"
)

// Two processes' views of one shared cloud: what one launches, starts,
// and terminates, the other sees at its next call, and a task started
// from both is started once.
func TestSharedCloudIsOneCloud(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	open := func() *Provider {
		p, err := OpenShared(dir, Config{RunTime: time.Minute, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	a, b := open(), open()
	spec := provision.ClusterSpec{Name: "sortie-7-0-1", NumNodes: 2, Placement: schema.Placement{Cloud: CloudName, Region: "sim-east", Zone: "sim-east-a"},
		Tags: map[string]string{provision.TagJob: "7", provision.TagTask: "0", provision.TagAttempt: "1"}}
	cl, err := a.Launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Status(ctx, []string{spec.Name})
	if err != nil || got[spec.Name] == nil || got[spec.Name].Nodes[1].InstanceID != cl.Nodes[1].InstanceID {
		t.Fatalf("the other process's status of %s: %+v, %v", spec.Name, got[spec.Name], err)
	}
	// b launching the same name finds a's cluster.
	again, err := b.Launch(ctx, spec)
	if err != nil || again.Nodes[0].InstanceID != cl.Nodes[0].InstanceID {
		t.Fatalf("a launch of the same name from the other process: %+v, %v", again, err)
	}
	for _, p := range []*Provider{a, b} {
		r, err := p.Runner(ctx, cl, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(ctx, node.ForAttempt(r, 1), node.StartSpec{Run: "train", Env: map[string]string{"SORTIE_JOB_ID": "7", "SORTIE_ATTEMPT": "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := ReadShared(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Clusters) != 1 || st.Starts[StartKey(7, 0, 1, 0)] != 1 {
		t.Fatalf("shared state after two starts of one task: %+v", st)
	}
	// a sees the task b's start found started, and polls it to its end.
	r, _ := a.Runner(ctx, cl, 0)
	clk.Advance(2 * time.Minute)
	s, err := node.Poll(ctx, node.ForAttempt(r, 1))
	if err != nil || !s.Started || !s.Done {
		t.Fatalf("poll after the run time: %+v, %v", s, err)
	}
	if err := b.Terminate(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Status(ctx, []string{spec.Name}); got[spec.Name] != nil {
		t.Fatalf("a still sees %s after b terminated it", spec.Name)
	}
	if l, _ := a.List(ctx); len(l) != 0 {
		t.Fatalf("a lists %d clusters after b terminated the only one", len(l))
	}
}

func TestSharedRefusesCapacity(t *testing.T) {
	_, err := OpenShared(t.TempDir(), Config{CapacityPerZone: 2})
	if err == nil || !strings.Contains(err.Error(), "sim.capacity_per_zone") {
		t.Fatalf("got %v", err)
	}
}
