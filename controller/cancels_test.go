package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
)

// gatedCloud is a fakeCloud whose teardowns wait for release, counting
// how many wait at once.
type gatedCloud struct {
	*fakeCloud
	mu             sync.Mutex
	inFlight, peak int
	entered        chan struct{}
	release        chan struct{}
}

// Status is the first call a cancel of a running attempt makes (asking
// for its cluster before keeping its logs): it waits for release.
func (g *gatedCloud) Status(ctx context.Context, names []string) (map[string]*provision.Cluster, error) {
	g.mu.Lock()
	g.inFlight++
	g.peak = max(g.peak, g.inFlight)
	g.mu.Unlock()
	g.entered <- struct{}{}
	<-g.release
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	return g.fakeCloud.Status(ctx, names)
}

func (g *gatedCloud) Terminate(context.Context, string) error { return nil }

// A cancel of many jobs winds up at most maxParallelCancels of them at a
// time: the rest wait their turn rather than crowd the store and the
// clouds in front of the jobs that go on.
func TestCancelsAreBounded(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	n := maxParallelCancels + 8
	var ids []int64
	for range n {
		j, _ := runningAttempt(t, c, cloud, "run: train\n")
		ids = append(ids, j.ID)
	}
	g := &gatedCloud{fakeCloud: cloud, entered: make(chan struct{}, n), release: make(chan struct{})}
	c.Providers = oneCloud{g}
	if _, err := c.Store.RequestCancel(ctx, ids); err != nil {
		t.Fatal(err)
	}
	// As the wake a cancel sends: no status call for the running jobs.
	if err := c.tick(ctx, tickScope{unwatched: true}); err != nil {
		t.Fatal(err)
	}
	for range maxParallelCancels {
		<-g.entered
	}
	// The others wait for a slot: none begins while every slot is taken.
	select {
	case <-g.entered:
		t.Errorf("a cancel began past the bound of %d", maxParallelCancels)
	case <-time.After(200 * time.Millisecond):
	}
	g.mu.Lock()
	peak := g.peak
	g.mu.Unlock()
	close(g.release)
	c.Wait()
	if peak > maxParallelCancels {
		t.Errorf("%d teardowns at once, want at most %d", peak, maxParallelCancels)
	}
	jobs, err := c.Store.Jobs(ctx, store.JobFilter{Statuses: []lifecycle.Status{lifecycle.Cancelled}})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != n {
		t.Errorf("%d jobs CANCELLED, want all %d", len(jobs), n)
	}
}
