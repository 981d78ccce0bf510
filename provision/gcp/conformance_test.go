package gcp

import (
	"testing"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
	"sortie/provision/internal/testenv"
	"sortie/provision/provisiontest"
	"sortie/schema"
)

// TestConformance runs the provider suite against the REST fake, with
// preemptions and stockouts made by the fake and every node a directory on
// the private sshd, once per termination action: a preempted spot VM is
// deleted, or stopped and kept.
func TestConformance(t *testing.T) {
	for _, action := range []string{TerminateDelete, TerminateStop} {
		t.Run(action, func(t *testing.T) {
			e := newEnv(t, true, gcpfake.Options{})
			withAction := func(c *Config) { c.TerminationAction = action }
			provisiontest.Run(t, provisiontest.Harness{
				New: func(t *testing.T) provision.Provider { return e.provider(t, withAction) },
				Reopen: func(t *testing.T, _ provision.Provider) provision.Provider {
					return e.provider(t, withAction)
				},
				Preempt: func(t *testing.T, p provision.Provider, name string, rank int) {
					m, err := p.Status(testContext(t), []string{name})
					if err != nil || m[name] == nil || rank >= len(m[name].Nodes) {
						t.Fatalf("preempt %s node %d: status %v, %v", name, rank, m[name], err)
					}
					c := m[name]
					if err := e.fake.Preempt(c.Placement.Zone, instanceName(name, rank)); err != nil {
						t.Fatal(err)
					}
					testenv.KillNodeProcesses(p.(*Provider).ssh.NodeDir(c.Nodes[rank].InstanceID))
				},
				NoCapacity: func(t *testing.T, _ provision.Provider, at schema.Placement) {
					e.fake.SetCapacity(at.Zone, false)
					t.Cleanup(func() { e.fake.SetCapacity(at.Zone, true) })
				},
				Resources:    spot(),
				RunsCommands: true,
			})
		})
	}
}
