package testenv

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"sortie/provision"
	"sortie/schema"
)

// Context is a test's context: it ends after d, or with the test.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// QuietLogger drops everything: a provider's launch and termination
// events would bury a failing test's own output.
func QuietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// TaggedSpec is the spec of a cluster for task 0, attempt 1 of job, tagged
// as the controller tags its clusters.
func TaggedSpec(job int64, nodes int, at schema.Placement, r schema.Resources) provision.ClusterSpec {
	name := provision.ClusterName(job, 0, 1)
	return provision.ClusterSpec{
		Name:      name,
		Placement: at,
		NumNodes:  nodes,
		Resources: r,
		Tags: map[string]string{
			provision.TagManaged: "true", provision.TagCluster: name,
			provision.TagJob: "1", provision.TagTask: "0", provision.TagAttempt: "1",
		},
	}
}

// Launch launches s within ctx, failing the test when that fails, and
// terminates the cluster when the test ends, whatever became of it.
func Launch(ctx context.Context, t testing.TB, p provision.Provider, s provision.ClusterSpec) *provision.Cluster {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p.Terminate(ctx, s.Name)
	})
	c, err := p.Launch(ctx, s)
	if err != nil {
		t.Fatalf("Launch %s at %s: %v", s.Name, s.Placement, err)
	}
	return c
}

// InstanceIDs lists the instance ids of c's nodes, in rank order.
func InstanceIDs(c *provision.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.InstanceID)
	}
	return out
}

// Build applies each change to cfg, in order, and makes a provider with
// newProvider (a backend's New), failing the test when that fails.
func Build[C, P any](t testing.TB, newProvider func(context.Context, C) (P, error), cfg C, change ...func(*C)) P {
	t.Helper()
	for _, f := range change {
		f(&cfg)
	}
	p, err := newProvider(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := any(p).(io.Closer); ok {
		// Its SSH connections to the nodes, as the controller's stop does.
		t.Cleanup(func() { c.Close() })
	}
	return p
}
