package sim

import (
	"context"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
)

// A cluster in a zone of LoseNodesIn loses its first node once a task has
// started on it; a cluster in another zone does not.
func TestLoseNodesInAZone(t *testing.T) {
	p, clk := newSim(t, Config{RunTime: time.Hour, LoseNodesIn: []string{"sim-east-a"}})
	c := launch(t, p, 30, 1, 2)
	r := runnerFor(t, p, c, 0, 1)
	if m, _ := p.Status(context.Background(), []string{c.Name}); m[c.Name].Nodes[0].State != provision.NodeRunning {
		t.Fatalf("before start: %s", describeCluster(m[c.Name]))
	}
	start(t, r, 30, 1)
	clk.Advance(time.Second)
	m, _ := p.Status(context.Background(), []string{c.Name})
	if n := m[c.Name].Nodes[0]; n.State != provision.NodeGone || n.Reason != LostReason {
		t.Fatalf("after start: %s, want node 0 gone", describeCluster(m[c.Name]))
	}
	if n := m[c.Name].Nodes[1]; n.State != provision.NodeRunning {
		t.Errorf("node 1: %s, want running", n.State)
	}
	if _, err := node.Poll(context.Background(), r); err == nil {
		t.Error("Poll of a lost node succeeded")
	}
	other := schema.Placement{Cloud: CloudName, Region: "sim-east", Zone: "sim-east-b"}
	c2, err := p.Launch(context.Background(), provision.ClusterSpec{Name: "sortie-31-0-1", Placement: other, NumNodes: 1,
		Tags: map[string]string{provision.TagJob: "31", provision.TagTask: "0", provision.TagAttempt: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	start(t, runnerFor(t, p, c2, 0, 1), 31, 1)
	if m, _ := p.Status(context.Background(), []string{c2.Name}); m[c2.Name].Nodes[0].State != provision.NodeRunning {
		t.Errorf("sim-east-b: %s, want running", describeCluster(m[c2.Name]))
	}
}
