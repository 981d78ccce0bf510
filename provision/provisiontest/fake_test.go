package provisiontest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"
	"sync"
	"testing"

	"sortie/provision"
	"sortie/provision/provisiontest"
	"sortie/schema"
)

// cloud is an in-memory backend with hollow nodes: the smallest thing that
// keeps the Provider contract, so that the suite itself is tested.
type cloud struct {
	mu       sync.Mutex
	clusters map[string]*provision.Cluster
	noCap    map[schema.Placement]bool
	seq      int
}

type fake struct{ c *cloud }

func (f fake) Name() string { return "fake" }

func (f fake) Placements(ctx context.Context, r schema.Resources) ([]schema.Placement, error) {
	var out []schema.Placement
	for _, z := range []string{"r1/a", "r1/b", "r2/a"} {
		p := schema.Placement{Cloud: "fake", Region: z[:2], Zone: z}
		if (r.Region == "" || r.Region == p.Region) && (r.Zone == "" || r.Zone == p.Zone) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f fake) Launch(ctx context.Context, spec provision.ClusterSpec) (*provision.Cluster, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if c, ok := f.c.clusters[spec.Name]; ok {
		return clone(c), nil
	}
	if f.c.noCap[spec.Placement] {
		return nil, provision.Capacity(fmt.Errorf("no capacity in %s", spec.Placement))
	}
	c := &provision.Cluster{Name: spec.Name, Placement: spec.Placement, Tags: maps.Clone(spec.Tags)}
	for i := range spec.NumNodes {
		f.c.seq++
		c.Nodes = append(c.Nodes, provision.Node{Rank: i, InstanceID: fmt.Sprintf("i-%d", f.c.seq), IP: "10.0.0.1", State: provision.NodeRunning})
	}
	f.c.clusters[spec.Name] = c
	return clone(c), nil
}

func (f fake) Status(ctx context.Context, names []string) (map[string]*provision.Cluster, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	out := map[string]*provision.Cluster{}
	for _, n := range names {
		if c, ok := f.c.clusters[n]; ok {
			out[n] = clone(c)
		}
	}
	return out, nil
}

func (f fake) Terminate(ctx context.Context, name string) error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	delete(f.c.clusters, name)
	return nil
}

func (f fake) List(ctx context.Context) ([]*provision.Cluster, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	var out []*provision.Cluster
	for _, c := range f.c.clusters {
		if c.Tags[provision.TagManaged] == "true" {
			out = append(out, clone(c))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f fake) Runner(ctx context.Context, c *provision.Cluster, rank int) (provision.Runner, error) {
	return hollow{}, nil
}

type hollow struct{}

func (hollow) Exec(context.Context, string, io.Reader) ([]byte, error) {
	return nil, errors.New("hollow node")
}
func (hollow) Dir() string  { return "/hollow" }
func (hollow) Close() error { return nil }

func clone(c *provision.Cluster) *provision.Cluster {
	d := *c
	d.Nodes = append([]provision.Node(nil), c.Nodes...)
	d.Tags = maps.Clone(c.Tags)
	return &d
}

func TestSuiteAgainstAnInMemoryCloud(t *testing.T) {
	provisiontest.Run(t, provisiontest.Harness{
		New: func(t *testing.T) provision.Provider {
			return fake{&cloud{clusters: map[string]*provision.Cluster{}, noCap: map[schema.Placement]bool{}}}
		},
		Reopen: func(t *testing.T, p provision.Provider) provision.Provider { return fake{p.(fake).c} },
		Preempt: func(t *testing.T, p provision.Provider, name string, rank int) {
			c := p.(fake).c
			c.mu.Lock()
			defer c.mu.Unlock()
			c.clusters[name].Nodes[rank].State = provision.NodePreempted
		},
		NoCapacity: func(t *testing.T, p provision.Provider, at schema.Placement) {
			c := p.(fake).c
			c.mu.Lock()
			defer c.mu.Unlock()
			c.noCap[at] = true
		},
	})
}
