// Package provisiontest is the conformance suite every provision.Provider
// backend passes: call Run from the backend's tests with a Harness that knows
// how to make the backend's weather (preemptions, capacity shortages).
package provisiontest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sortie/provision"
	"sortie/schema"
)

// Harness adapts one backend to the suite.
type Harness struct {
	// New returns a fresh provider for one test; the test's cleanups stop
	// what it started.
	New func(t *testing.T) provision.Provider
	// Reopen returns a second provider object over p's backend state, as a
	// controller that restarted would build. Nil skips the restart checks.
	Reopen func(t *testing.T, p provision.Provider) provision.Provider
	// Preempt makes the cloud take node rank of cluster name away as a spot
	// interruption would (killing its processes, if it has any).
	Preempt func(t *testing.T, p provision.Provider, name string, rank int)
	// NoCapacity makes launches at placement at fail with a capacity error.
	// Nil if the backend cannot.
	NoCapacity func(t *testing.T, p provision.Provider, at schema.Placement)
	// Resources is what clusters are launched with.
	Resources schema.Resources
	// RunsCommands says whether Runner.Exec really runs commands (false for
	// hollow nodes).
	RunsCommands bool
	// Timeout bounds each test, including waits for eventual states; zero
	// means two minutes.
	Timeout time.Duration
}

// Run runs the suite against the backend h adapts.
func Run(t *testing.T, h Harness) {
	if h.Timeout == 0 {
		h.Timeout = 2 * time.Minute
	}
	s := suite{h}
	t.Run("Placements", s.placements)
	t.Run("Launch", s.launch)
	t.Run("LaunchIsIdempotent", s.launchTwice)
	t.Run("StatusBatch", s.statusBatch)
	t.Run("Preempt", s.preempt)
	t.Run("Terminate", s.terminate)
	t.Run("List", s.list)
	t.Run("CapacityError", s.capacity)
	t.Run("Commands", s.commands)
}

type suite struct{ h Harness }

// env is one test's provider, context and launched clusters.
type env struct {
	t   *testing.T
	h   Harness
	p   provision.Provider
	ctx context.Context
}

func (s suite) env(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
	t.Cleanup(cancel)
	return &env{t: t, h: s.h, p: s.h.New(t), ctx: ctx}
}

// spec is a cluster spec for job at the first placement, tagged as sortie
// tags its clusters; launched clusters are terminated when the test ends.
func (e *env) spec(job int64, nodes int) provision.ClusterSpec {
	e.t.Helper()
	ps := e.placements(e.p)
	name := provision.ClusterName(job, 0, 1)
	return provision.ClusterSpec{
		Name:      name,
		Placement: ps[0],
		NumNodes:  nodes,
		Resources: e.h.Resources,
		Tags: map[string]string{
			provision.TagManaged: "true",
			provision.TagCluster: name,
			provision.TagJob:     fmt.Sprint(job),
			provision.TagTask:    "0",
			provision.TagAttempt: "1",
		},
	}
}

func (e *env) placements(p provision.Provider) []schema.Placement {
	e.t.Helper()
	ps, err := p.Placements(e.ctx, e.h.Resources)
	if err != nil {
		e.t.Fatalf("Placements: %v", err)
	}
	if len(ps) == 0 {
		e.t.Fatal("Placements returned none")
	}
	return ps
}

// launch launches spec, fails the test on error, and terminates the cluster
// when the test ends.
func (e *env) launch(p provision.Provider, spec provision.ClusterSpec) *provision.Cluster {
	e.t.Helper()
	e.cleanup(spec.Name)
	c, err := p.Launch(e.ctx, spec)
	if err != nil {
		e.t.Fatalf("Launch %s at %s: %v", spec.Name, spec.Placement, err)
	}
	return c
}

func (e *env) cleanup(name string) {
	p := e.p
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Terminate(ctx, name); err != nil {
			e.t.Errorf("cleanup: Terminate %s: %v", name, err)
		}
	})
}

func (e *env) status(p provision.Provider, names ...string) map[string]*provision.Cluster {
	e.t.Helper()
	m, err := p.Status(e.ctx, names)
	if err != nil {
		e.t.Fatalf("Status %v: %v", names, err)
	}
	return m
}

// eventually polls Status of name every 20ms until ok holds, and fails the
// test with what it last saw when the context ends first.
func (e *env) eventually(what, name string, ok func(c *provision.Cluster) bool) *provision.Cluster {
	e.t.Helper()
	var last *provision.Cluster
	for {
		m, err := e.p.Status(e.ctx, []string{name})
		if err == nil {
			last = m[name]
			if ok(last) {
				return last
			}
		}
		select {
		case <-e.ctx.Done():
			e.t.Fatalf("%s: not seen before the deadline; last status of %s: %s (err %v)", what, name, describe(last), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func describe(c *provision.Cluster) string {
	if c == nil {
		return "absent"
	}
	s := c.Placement.String()
	for _, n := range c.Nodes {
		s += fmt.Sprintf(" [%d %s %s %s]", n.Rank, n.InstanceID, n.State, n.Reason)
	}
	return s
}

func ids(c *provision.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.InstanceID)
	}
	return out
}
