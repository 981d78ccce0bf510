package controller

import (
	"context"
	"testing"
	"time"

	"sortie/provision"
)

func TestRecoveryGoesOnBeforeTheNextTick(t *testing.T) {
	for _, tc := range []struct {
		name      string
		following bool
		backoff   time.Duration
		want      int // attempts after one tick
	}{
		{"driven by hand: one step per tick", false, time.Nanosecond, 1},
		{"running loop: the next attempt at once", true, time.Nanosecond, 2},
		{"running loop, back-off longer than a tick: left to the ticks", true, time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
			c := newTestController(t, cloud)
			c.Config.Controller.RestartBackoffInitial = Duration(tc.backoff)
			c.Config.Controller.RestartBackoffMax = Duration(tc.backoff)
			c.following.Store(tc.following)
			c.Now = time.Now // the back-off must end: a nanosecond of real time
			j, a := runningAttempt(t, c, cloud, "run: train\n")
			cloud.clusters[a.Cluster].Nodes[0].State = provision.NodePreempted
			if err := c.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			c.Wait()
			as, err := c.Store.Attempts(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(as) != tc.want {
				t.Fatalf("%d attempts after one tick, want %d", len(as), tc.want)
			}
			if as[0].Outcome != "preempted" {
				t.Errorf("attempt 1 outcome %q, want preempted", as[0].Outcome)
			}
			if len(c.cont) != 0 {
				t.Errorf("%d follow-ups left behind", len(c.cont))
			}
		})
	}
}
