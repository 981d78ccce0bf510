package aws

import (
	"path/filepath"
	"testing"

	"sortie/provision"
	"sortie/provision/internal/testenv"
	"sortie/provision/provisiontest"
	"sortie/schema"
)

// TestConformance runs the provider suite against EC2 as moto emulates it,
// with spot interruptions and capacity shortages from the proxy and every
// node a directory on the private sshd.
func TestConformance(t *testing.T) {
	e := newEnv(t)
	provisiontest.Run(t, provisiontest.Harness{
		New: func(t *testing.T) provision.Provider { return e.provider(t) },
		Reopen: func(t *testing.T, _ provision.Provider) provision.Provider {
			return e.provider(t)
		},
		Preempt: func(t *testing.T, p provision.Provider, name string, rank int) {
			ctx := testContext(t)
			m, err := p.Status(ctx, []string{name})
			if err != nil || m[name] == nil || rank >= len(m[name].Nodes) {
				t.Fatalf("preempt %s node %d: status %v, %v", name, rank, m[name], err)
			}
			c := m[name]
			id := c.Nodes[rank].InstanceID
			if err := e.proxy.SpotInterrupt(ctx, c.Placement.Region, id); err != nil {
				t.Fatalf("preempt %s: %v", id, err)
			}
			testenv.KillNodeProcesses(filepath.Join(e.nodes, id))
		},
		NoCapacity: func(t *testing.T, _ provision.Provider, at schema.Placement) {
			e.proxy.SetCapacity(at.Zone, false)
			t.Cleanup(func() { e.proxy.SetCapacity(at.Zone, true) })
		},
		Resources:    spot(),
		RunsCommands: true,
	})
}
