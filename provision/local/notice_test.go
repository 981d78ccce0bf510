package local

import (
	"context"
	"strings"
	"testing"
	"time"

	"sortie/provision"
)

// A node under a notice runs until its time, then the first Status that
// asks after it finds it preempted.
func TestPreemptAt(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	p := New(Config{Home: t.TempDir(), Now: func() time.Time { return now }})
	cl, err := p.Launch(ctx, provision.ClusterSpec{Name: "sortie-1-0-1", NumNodes: 2, Placement: pl("local", "local-a")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(ctx, cl.Name)
	if err := p.PreemptAt(ctx, cl.Name, 1, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	state := func() []provision.NodeState {
		got, err := p.Status(ctx, []string{cl.Name})
		if err != nil {
			t.Fatal(err)
		}
		var out []provision.NodeState
		for _, n := range got[cl.Name].Nodes {
			out = append(out, n.State)
		}
		return out
	}
	if s := state(); s[0] != provision.NodeRunning || s[1] != provision.NodeRunning {
		t.Fatalf("before the deadline: %v, want both running", s)
	}
	now = now.Add(30 * time.Second)
	if s := state(); s[0] != provision.NodeRunning || s[1] != provision.NodePreempted {
		t.Fatalf("at the deadline: %v, want node 1 preempted", s)
	}
	if err := p.PreemptAt(ctx, cl.Name, 1, now); err == nil || !strings.Contains(err.Error(), "node 1 is preempted already") {
		t.Errorf("a notice to a preempted node: %v", err)
	}
	for _, bad := range []struct {
		cluster string
		rank    int
		want    string
	}{
		{cl.Name, 2, "node rank 2 out of range; the cluster has ranks 0-1"},
		{"sortie-9-0-1", 0, "no such local cluster"},
	} {
		if err := p.PreemptAt(ctx, bad.cluster, bad.rank, now); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("PreemptAt(%s, %d): %v, want %q", bad.cluster, bad.rank, err, bad.want)
		}
	}
}
