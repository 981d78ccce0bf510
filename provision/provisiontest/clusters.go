package provisiontest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/provision"
)

func (s suite) placements(t *testing.T) {
	e := s.env(t)
	ps := e.placements(e.p)
	seen := map[string]bool{}
	for _, pl := range ps {
		if pl.Cloud != e.p.Name() {
			t.Errorf("placement %s: cloud %q, want the provider's name %q", pl, pl.Cloud, e.p.Name())
		}
		if pl.Region == "" {
			t.Errorf("placement %s has no region", pl)
		}
		if seen[pl.String()] {
			t.Errorf("placement %s listed twice", pl)
		}
		seen[pl.String()] = true
	}
	if diff := cmp.Diff(ps, e.placements(e.p)); diff != "" {
		t.Errorf("second Placements differs (-first +second):\n%s", diff)
	}

	// Pins narrow the list to what they name.
	r := s.h.Resources
	r.Region, r.Zone = ps[0].Region, ""
	pinned, err := e.p.Placements(e.ctx, r)
	if err != nil || len(pinned) == 0 {
		t.Fatalf("Placements pinned to region %s = %v, %v; want some", r.Region, pinned, err)
	}
	for _, pl := range pinned {
		if pl.Region != r.Region {
			t.Errorf("Placements pinned to region %s returned %s", r.Region, pl)
		}
	}
	if ps[0].Zone != "" {
		r.Zone = ps[0].Zone
		pinned, err := e.p.Placements(e.ctx, r)
		if err != nil || len(pinned) == 0 {
			t.Fatalf("Placements pinned to zone %s = %v, %v; want some", r.Zone, pinned, err)
		}
		for _, pl := range pinned {
			if pl.Region != r.Region || pl.Zone != r.Zone {
				t.Errorf("Placements pinned to %s/%s returned %s", r.Region, r.Zone, pl)
			}
		}
	}
}

// checkLaunched checks c is spec's cluster with every node running.
func checkLaunched(t *testing.T, spec provision.ClusterSpec, c *provision.Cluster) {
	t.Helper()
	if c == nil {
		t.Fatalf("cluster %s: nil", spec.Name)
	}
	if c.Name != spec.Name {
		t.Errorf("cluster name %q, want %q", c.Name, spec.Name)
	}
	if c.Placement.Cloud != spec.Placement.Cloud || c.Placement.Region != spec.Placement.Region ||
		(spec.Placement.Zone != "" && c.Placement.Zone != spec.Placement.Zone) {
		t.Errorf("cluster %s placed at %s, want %s", c.Name, c.Placement, spec.Placement)
	}
	if len(c.Nodes) != spec.NumNodes {
		t.Fatalf("cluster %s has %d nodes, want %d: %s", c.Name, len(c.Nodes), spec.NumNodes, describe(c))
	}
	seen := map[string]bool{}
	for i, n := range c.Nodes {
		if n.Rank != i {
			t.Errorf("node %d has rank %d; nodes must be in rank order 0..n-1", i, n.Rank)
		}
		if n.State != provision.NodeRunning {
			t.Errorf("node %d is %s after Launch, want running", i, n.State)
		}
		if n.InstanceID == "" || seen[n.InstanceID] {
			t.Errorf("node %d instance id %q is empty or not unique", i, n.InstanceID)
		}
		seen[n.InstanceID] = true
		if n.IP == "" {
			t.Errorf("node %d has no IP", i)
		}
	}
	for k, v := range spec.Tags {
		if c.Tags[k] != v {
			t.Errorf("cluster %s tag %s = %q, want %q", c.Name, k, c.Tags[k], v)
		}
	}
}

func (s suite) launch(t *testing.T) {
	e := s.env(t)
	spec := e.spec(9101, 2)
	c := e.launch(e.p, spec)
	checkLaunched(t, spec, c)
	got := e.status(e.p, spec.Name)[spec.Name]
	checkLaunched(t, spec, got)
	if diff := cmp.Diff(ids(c), ids(got)); diff != "" {
		t.Errorf("Status shows other instances than Launch returned (-launch +status):\n%s", diff)
	}
}

func (s suite) launchTwice(t *testing.T) {
	e := s.env(t)
	spec := e.spec(9102, 2)
	first := e.launch(e.p, spec)
	second := e.launch(e.p, spec)
	checkLaunched(t, spec, second)
	if diff := cmp.Diff(ids(first), ids(second)); diff != "" {
		t.Errorf("second Launch of %s returned other instances (-first +second):\n%s", spec.Name, diff)
	}
	all, err := e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range all {
		if c.Name == spec.Name {
			n++
			if len(c.Nodes) != spec.NumNodes {
				t.Errorf("List shows %s with %d nodes, want %d: %s", c.Name, len(c.Nodes), spec.NumNodes, describe(c))
			}
		}
	}
	if n != 1 {
		t.Errorf("List shows %s %d times, want once", spec.Name, n)
	}
}

func (s suite) statusBatch(t *testing.T) {
	e := s.env(t)
	a, b := e.spec(9103, 1), e.spec(9104, 1)
	ca, cb := e.launch(e.p, a), e.launch(e.p, b)
	unknown := provision.ClusterName(9199, 0, 1)
	m := e.status(e.p, a.Name, unknown, b.Name)
	if len(m) != 2 {
		t.Errorf("Status returned %d clusters, want 2 (%s, %s)", len(m), a.Name, b.Name)
	}
	if _, ok := m[unknown]; ok {
		t.Errorf("Status reports %s, which was never launched", unknown)
	}
	for _, want := range []*provision.Cluster{ca, cb} {
		got, ok := m[want.Name]
		if !ok {
			t.Errorf("Status lacks %s", want.Name)
			continue
		}
		if diff := cmp.Diff(ids(want), ids(got)); diff != "" {
			t.Errorf("Status of %s (-launch +status):\n%s", want.Name, diff)
		}
		if got.Nodes[0].State != provision.NodeRunning {
			t.Errorf("%s node 0 is %s, want running", want.Name, got.Nodes[0].State)
		}
	}
	if m := e.status(e.p); len(m) != 0 {
		t.Errorf("Status of no names returned %d clusters", len(m))
	}
}

func (s suite) preempt(t *testing.T) {
	if s.h.Preempt == nil {
		t.Skip("the harness cannot preempt")
	}
	e := s.env(t)
	spec := e.spec(9105, 2)
	e.launch(e.p, spec)
	s.h.Preempt(t, e.p, spec.Name, 1)
	c := e.eventually("node 1 preempted", spec.Name, func(c *provision.Cluster) bool {
		return c != nil && len(c.Nodes) == 2 && c.Nodes[1].State == provision.NodePreempted
	})
	if c.Nodes[0].State != provision.NodeRunning {
		t.Errorf("node 0 is %s after node 1 was preempted, want running", c.Nodes[0].State)
	}
}

// gone reports whether c is absent or has every node terminated.
func gone(c *provision.Cluster) bool {
	if c == nil {
		return true
	}
	for _, n := range c.Nodes {
		if n.State != provision.NodeTerminated {
			return false
		}
	}
	return true
}

func (s suite) terminate(t *testing.T) {
	e := s.env(t)
	spec := e.spec(9106, 2)
	e.launch(e.p, spec)
	if err := e.p.Terminate(e.ctx, spec.Name); err != nil {
		t.Fatalf("Terminate: %v", err)
	}
	e.eventually("cluster terminated", spec.Name, gone)
	if err := e.p.Terminate(e.ctx, spec.Name); err != nil {
		t.Errorf("second Terminate: %v, want nil", err)
	}
	if err := e.p.Terminate(e.ctx, provision.ClusterName(9198, 0, 1)); err != nil {
		t.Errorf("Terminate of a cluster never launched: %v, want nil", err)
	}
	all, err := e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Name == spec.Name && !gone(c) {
			t.Errorf("List shows terminated %s with live nodes: %s", c.Name, describe(c))
		}
	}
}

func (s suite) list(t *testing.T) {
	e := s.env(t)
	spec := e.spec(9107, 2)
	launched := e.launch(e.p, spec)
	find := func(p provision.Provider, who string) {
		t.Helper()
		all, err := p.List(e.ctx)
		if err != nil {
			t.Fatalf("%s List: %v", who, err)
		}
		for _, c := range all {
			if c.Name != spec.Name {
				continue
			}
			for k, v := range spec.Tags {
				if c.Tags[k] != v {
					t.Errorf("%s List: tag %s = %q, want %q", who, k, c.Tags[k], v)
				}
			}
			if diff := cmp.Diff(ids(launched), ids(c)); diff != "" {
				t.Errorf("%s List shows other instances (-launch +list):\n%s", who, diff)
			}
			return
		}
		t.Errorf("%s List lacks %s", who, spec.Name)
	}
	find(e.p, "the launching provider's")
	if s.h.Reopen == nil {
		return
	}
	// A controller that restarted builds a new provider and must find, and
	// never relaunch, what the old one launched.
	p2 := s.h.Reopen(t, e.p)
	find(p2, "a reopened provider's")
	got := e.status(p2, spec.Name)[spec.Name]
	if got == nil {
		t.Fatalf("a reopened provider's Status lacks %s", spec.Name)
	}
	again, err := p2.Launch(e.ctx, spec)
	if err != nil {
		t.Fatalf("a reopened provider's Launch of %s: %v", spec.Name, err)
	}
	if diff := cmp.Diff(ids(launched), ids(again)); diff != "" {
		t.Errorf("a reopened provider launched %s again (-first +again):\n%s", spec.Name, diff)
	}
}

func (s suite) capacity(t *testing.T) {
	if s.h.NoCapacity == nil {
		t.Skip("the harness cannot take capacity away")
	}
	e := s.env(t)
	spec := e.spec(9108, 2)
	ps := e.placements(e.p)
	s.h.NoCapacity(t, e.p, spec.Placement)
	e.cleanup(spec.Name)
	_, err := e.p.Launch(e.ctx, spec)
	if err == nil {
		t.Fatalf("Launch at %s succeeded with no capacity there", spec.Placement)
	}
	if got := provision.Classify(err); got != provision.ClassCapacity {
		t.Errorf("Launch error %q is classified %s, want %s", err, got, provision.ClassCapacity)
	}
	if c := e.status(e.p, spec.Name)[spec.Name]; c != nil {
		for _, n := range c.Nodes {
			if n.State == provision.NodeRunning || n.State == provision.NodePending {
				t.Errorf("a failed launch left node %d %s", n.Rank, n.State)
			}
		}
	}
	// Another placement is unaffected.
	for _, pl := range ps[1:] {
		if pl == spec.Placement {
			continue
		}
		other := e.spec(9109, 1)
		other.Placement = pl
		checkLaunched(t, other, e.launch(e.p, other))
		break
	}
}
