package kubernetes

import (
	"testing"

	"sortie/provision"
	"sortie/provision/provisiontest"
	"sortie/schema"
)

// TestConformance runs the provider suite against the real apiserver:
// the placements are two namespaces of one context, the test's kubelet
// runs the pods (or leaves them unschedulable in a namespace made full),
// and a preemption is the DisruptionTarget condition a drain or a spot
// node's loss sets.
func TestConformance(t *testing.T) {
	e := newEnv(t, 2)
	provisiontest.Run(t, provisiontest.Harness{
		New:    func(t *testing.T) provision.Provider { return e.provider(t) },
		Reopen: func(t *testing.T, _ provision.Provider) provision.Provider { return e.provider(t) },
		Preempt: func(t *testing.T, p provision.Provider, name string, rank int) {
			c := p.(*Provider)
			m, err := c.Status(testContext(t), []string{name})
			if err != nil || m[name] == nil {
				t.Fatalf("preempt %s: status %v, %v", name, m, err)
			}
			if err := e.kubelet.Disrupt(testContext(t), m[name].Placement.Zone, podName(name, rank), "DeletionByTaintManager"); err != nil {
				t.Fatal(err)
			}
		},
		NoCapacity: func(t *testing.T, _ provision.Provider, at schema.Placement) {
			e.kubelet.Full(at.Zone, true)
			t.Cleanup(func() { e.kubelet.Full(at.Zone, false) })
		},
		Resources: schema.Resources{Cloud: CloudName, UseSpot: true, CPUs: "1+"},
	})
}
