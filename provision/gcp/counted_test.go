package gcp

import (
	"testing"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
	"sortie/provision/internal/testenv"
)

// Every Compute Engine call is told once, with its error.
func TestEveryComputeCallIsCounted(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	log := &testenv.CallLog{}
	p := e.provider(t, func(c *Config) { c.Calls = log.Calls })
	ctx := testContext(t)
	if _, err := p.Status(ctx, []string{provision.ClusterName(1, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if log.OK("Instances") != 1 {
		t.Errorf("a status check counted %d Instances calls, want 1", log.OK("Instances"))
	}
	e.fake.FailNext("instances.aggregatedList", 500, "backendError", "injected")
	if _, err := p.Status(ctx, []string{provision.ClusterName(1, 0, 1)}); err == nil {
		t.Fatal("Status succeeded despite the injected error")
	}
	if log.Failed("Instances") != 1 {
		t.Errorf("the failed list counted %d errors, want 1", log.Failed("Instances"))
	}
}
