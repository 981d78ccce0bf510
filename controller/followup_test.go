package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/sim"
	"sortie/schema"
	"sortie/strategy/clocktest"
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

func TestNewAttemptIsCheckedEarly(t *testing.T) {
	for _, tc := range []struct {
		name      string
		following bool
		want      lifecycle.Status
	}{
		{"driven by hand: seen at the next tick", false, lifecycle.Running},
		{"running loop: seen by an early check", true, lifecycle.Succeeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			hollow := sim.New(sim.Config{RunTime: 100 * time.Millisecond, Now: clk.Now})
			c := newTestController(t, &fakeCloud{})
			c.Providers = oneCloud{hollow}
			c.Now, c.sched.Sleep = clk.Now, clk.Skip
			c.sched.Follow(tc.following)
			p, err := schema.Parse([]byte("resources: {cloud: sim}\nrun: train\n"), clouds.Schema())
			if err != nil {
				t.Fatal(err)
			}
			b, _ := p.Marshal()
			id, err := c.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: b}, []store.NewTask{{}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			c.Wait()
			j, err := c.Store.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.Status != tc.want {
				t.Errorf("after one tick the job is %s (%s), want %s", j.Status, j.StatusReason, tc.want)
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

// The end of a task on a local node is seen when its agent exits, not at
// the next check: with a poll interval of an hour, a task that outlives
// the early checks still ends its job within seconds.
func TestLocalEndIsSeenWhenTheAgentExits(t *testing.T) {
	c := localController(t)
	if err := os.WriteFile(filepath.Join(c.Config.Home, "config.yaml"), []byte("controller:\n  poll_interval: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = restarted(t, c)
	id := createJob(t, c, "resources: {cloud: local}\nrun: sleep 2\n")
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-ran
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := c.Store.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Terminal() {
			if j.Status != lifecycle.Succeeded {
				t.Errorf("job %s (%s), want SUCCEEDED", j.Status, j.StatusReason)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s 30s after its 2s task began: its end was not seen", j.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
