package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/provision"
	"sortie/schema"
)

// slowLaunch is a cloud whose launch makes its cluster, then waits (for
// instances to answer SSH) until its context ends, when it returns the
// context's error; or, with cancelAt set, returns the cluster after
// calling cancelAt.
type slowLaunch struct {
	*fakeCloud
	mu       sync.Mutex
	started  chan struct{}
	runners  int
	cancelAt func()
}

func (s *slowLaunch) Placements(context.Context, schema.Resources) ([]schema.Placement, error) {
	return []schema.Placement{{Cloud: "local", Region: "local", Zone: "local-a"}}, nil
}

func (s *slowLaunch) Launch(ctx context.Context, spec provision.ClusterSpec) (*provision.Cluster, error) {
	s.mu.Lock()
	cl := &provision.Cluster{Name: spec.Name, Placement: spec.Placement, Nodes: []provision.Node{{Rank: 0, State: provision.NodeRunning}}}
	s.clusters[spec.Name] = cl
	s.mu.Unlock()
	provision.Progress(ctx, "waiting for SSH on node 0: unable to authenticate, try 5")
	close(s.started)
	if s.cancelAt != nil {
		s.cancelAt()
		return cl, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *slowLaunch) Status(ctx context.Context, names []string) (map[string]*provision.Cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fakeCloud.Status(ctx, names)
}

func (s *slowLaunch) Terminate(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fakeCloud.Terminate(ctx, name)
}

func (s *slowLaunch) Runner(context.Context, *provision.Cluster, int) (provision.Runner, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runners++
	return nil, errors.New("unreachable")
}

// waitOrFail waits for c's steps, failing the test when they have not
// returned within a generous bound (a launch the cancel did not stop never
// returns).
func waitOrFail(t *testing.T, c *Controller, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the launch still runs", what)
	}
}

// A cancel requested while a launch waits stops the launch at once, tears
// down what it made, ends the job CANCELLED and never starts the task.
func TestCancelStopsALaunchInFlight(t *testing.T) {
	ctx := context.Background()
	cloud := &slowLaunch{fakeCloud: &fakeCloud{clusters: map[string]*provision.Cluster{}}, started: make(chan struct{})}
	c := newTestController(t, cloud.fakeCloud)
	c.Providers = oneCloud{cloud}
	id := createJob(t, c, "run: train\n")
	if err := c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cloud.started:
	case <-time.After(10 * time.Second):
		j, _ := c.Store.Job(ctx, id)
		t.Fatalf("no launch began: job %s (%s, %s)", j.Status, j.StatusReason, j.FailureReason)
	}
	// What the launch waits for shows on the job (jobs show, jobs queue -o json).
	if j, err := c.Store.Job(ctx, id); err != nil || j.Status != lifecycle.Starting ||
		j.StatusReason != "waiting for SSH on node 0: unable to authenticate, try 5" {
		t.Errorf("while the launch waits, the job is %s (%q), %v; want STARTING saying what it waits for", j.Status, j.StatusReason, err)
	}
	if _, err := c.Store.RequestCancel(ctx, []int64{id}); err != nil {
		t.Fatal(err)
	}
	// What a cancel's wake does.
	if err := c.tick(ctx, tickScope{unwatched: true}); err != nil {
		t.Fatal(err)
	}
	waitOrFail(t, c, "after the cancel's wake")
	checkCancelledBeforeStart(t, c, cloud, id)
}

// A cancel requested just as the launch returns is seen before the task
// starts.
func TestCancelAsTheLaunchEndsNeverStartsTheTask(t *testing.T) {
	ctx := context.Background()
	cloud := &slowLaunch{fakeCloud: &fakeCloud{clusters: map[string]*provision.Cluster{}}, started: make(chan struct{})}
	c := newTestController(t, cloud.fakeCloud)
	c.Providers = oneCloud{cloud}
	id := createJob(t, c, "run: train\n")
	cloud.cancelAt = func() {
		if _, err := c.Store.RequestCancel(ctx, []int64{id}); err != nil {
			t.Error(err)
		}
	}
	if err := c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	waitOrFail(t, c, "after the launch")
	checkCancelledBeforeStart(t, c, cloud, id)
}

func checkCancelledBeforeStart(t *testing.T, c *Controller, cloud *slowLaunch, id int64) {
	t.Helper()
	ctx := context.Background()
	j, err := c.Store.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != lifecycle.Cancelled {
		t.Errorf("job is %s (%s), want CANCELLED", j.Status, j.StatusReason)
	}
	name := provision.ClusterName(id, 0, 1)
	cloud.mu.Lock()
	defer cloud.mu.Unlock()
	if len(cloud.terminated) == 0 || cloud.terminated[len(cloud.terminated)-1] != name {
		t.Errorf("terminated %v, want the launch's cluster %s", cloud.terminated, name)
	}
	if cloud.runners != 0 {
		t.Errorf("the controller reached a node %d times: the task was being started", cloud.runners)
	}
	as, err := c.Store.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].State != lifecycle.AttemptEnded || as[0].Outcome != "cancelled" {
		t.Errorf("attempts %+v, want one ended cancelled", as)
	}
}
