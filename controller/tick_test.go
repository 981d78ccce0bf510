package controller

import (
	"context"
	"testing"
	"time"

	"sortie/controller/config"
	"sortie/controller/lifecycle"
	"sortie/provision"
)

func TestShards(t *testing.T) {
	for _, tc := range []struct {
		poll time.Duration
		want int
	}{{100 * time.Millisecond, 1}, {time.Second, 4}, {5 * time.Second, 20}, {time.Minute, 20}} {
		c := &Controller{Config: config.Config{Controller: config.ControllerConfig{PollInterval: config.Duration(tc.poll)}}}
		if got := c.shards(); got != tc.want {
			t.Errorf("poll interval %s: %d shards, want %d", tc.poll, got, tc.want)
		}
	}
}

func TestTickScopes(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, "run: train\n")
	cloud.clusters[a.Cluster].Nodes[0].State = provision.NodePreempted
	ended := func() bool {
		t.Helper()
		as, err := c.Store.Attempts(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		return as[0].State == lifecycle.AttemptEnded
	}
	for _, tc := range []struct {
		name  string
		scope tickScope
		want  bool
	}{
		{"a wake leaves watched attempts to their shard", tickScope{unwatched: true}, false},
		{"another shard", tickScope{shards: 4, shard: int(j.ID+1) % 4}, false},
		{"the job's shard", tickScope{shards: 4, shard: int(j.ID) % 4}, true},
	} {
		if err := c.tick(ctx, tc.scope); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		if got := ended(); got != tc.want {
			t.Fatalf("%s: attempt ended %v, want %v", tc.name, got, tc.want)
		}
	}
}
