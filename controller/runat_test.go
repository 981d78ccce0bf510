package controller

import (
	"context"
	"testing"

	"sortie/controller/lifecycle"
	"sortie/provision"
	"sortie/provision/node"
)

// The run step's start is recorded once every node has left setup, for a
// follow to say "run started"; a node still in setup records nothing.
func TestJudgeRecordsTheRunStart(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, "setup: pip install -r req.txt\nrun: train\n")
	cloud.clusters[a.Cluster].Nodes = append(cloud.clusters[a.Cluster].Nodes, provision.Node{Rank: 1, State: provision.NodeRunning})
	setup := node.Status{Started: true, AgentAlive: true, Phase: node.PhaseSetup}
	run := node.Status{Started: true, AgentAlive: true, Phase: node.PhaseRun}
	runAt := func() bool {
		t.Helper()
		as, err := c.Store.Attempts(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if as[0].State != lifecycle.AttemptRunning {
			t.Fatalf("attempt %s, want it running", as[0].State)
		}
		return as[0].RunAt != nil
	}
	if err := c.judge(ctx, j, a, cloud, cloud.clusters[a.Cluster], []node.Status{run, setup}); err != nil {
		t.Fatal(err)
	}
	if runAt() {
		t.Error("the run start was recorded while node 1 was in setup")
	}
	if err := c.judge(ctx, j, a, cloud, cloud.clusters[a.Cluster], []node.Status{run, run}); err != nil {
		t.Fatal(err)
	}
	if !runAt() || a.RunAt == nil {
		t.Error("the run start was not recorded once every node runs")
	}
}
