package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"sortie/controller/config"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
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
			c.Config.Controller.RestartBackoffInitial = config.Duration(tc.backoff)
			c.Config.Controller.RestartBackoffMax = config.Duration(tc.backoff)
			c.sched.Follow(tc.following)
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
		})
	}
}

// noCloud is a set of providers where every cloud is down.
type noCloud struct{}

func (noCloud) Provider(context.Context, string) (provision.Provider, error) {
	return nil, errors.New("cloud down")
}
func (noCloud) Opened() []string { return nil }

func TestAStepBetweenTicksReturnsItsError(t *testing.T) {
	ctx := context.Background()
	c := newTestController(t, &fakeCloud{})
	c.Providers = noCloud{}
	id := restartOnKeptCluster(t, c)
	if more, err := c.step(ctx, id); !more || err == nil || !strings.Contains(err.Error(), "cloud down") {
		t.Fatalf("step returned %t, %v; want true and the reconcile's error (cloud down)", more, err)
	}
}

func TestAReconcileErrorSaysWhatWasBeingDone(t *testing.T) {
	ctx := context.Background()
	c := newTestController(t, &fakeCloud{})
	c.Providers = noCloud{}
	var logs bytes.Buffer
	c.Log = slog.New(slog.NewTextHandler(&logs, nil))
	id := restartOnKeptCluster(t, c)
	if err := c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	want := fmt.Sprintf("reconcile job %d: start attempt 1: cloud down", id)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the controller logged\n%s\nwant a line with %q", logs.String(), want)
	}
}

// restartOnKeptCluster stores a job whose next attempt restarts on the
// cluster of the one before: starting it asks the cloud first.
func restartOnKeptCluster(t *testing.T, c *Controller) int64 {
	t.Helper()
	id := createJob(t, c, "run: train\n")
	kept := &store.Attempt{Cluster: "kept", Cloud: "fake"}
	if _, err := c.Store.NewAttempt(context.Background(), id, 0, func(int) string { return "kept" }, kept, lifecycle.Recovering); err != nil {
		t.Fatal(err)
	}
	return id
}
