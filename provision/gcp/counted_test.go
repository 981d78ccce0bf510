package gcp

import (
	"sync"
	"testing"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
)

// callLog records what a provider's Calls is told.
type callLog struct {
	mu         sync.Mutex
	ok, failed map[string]int
}

func (l *callLog) calls(call string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed[call]++
		return
	}
	l.ok[call]++
}

// Every Compute Engine call is told once, with its error.
func TestEveryComputeCallIsCounted(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	log := &callLog{ok: map[string]int{}, failed: map[string]int{}}
	p := e.provider(t, func(c *Config) { c.Calls = log.calls })
	ctx := testContext(t)
	if _, err := p.Status(ctx, []string{provision.ClusterName(1, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if log.ok["Instances"] != 1 {
		t.Errorf("a status check counted %d Instances calls, want 1 (%v)", log.ok["Instances"], log.ok)
	}
	e.fake.FailNext("instances.aggregatedList", 500, "backendError", "injected")
	if _, err := p.Status(ctx, []string{provision.ClusterName(1, 0, 1)}); err == nil {
		t.Fatal("Status succeeded despite the injected error")
	}
	if log.failed["Instances"] != 1 {
		t.Errorf("the failed list counted %d errors, want 1 (%v)", log.failed["Instances"], log.failed)
	}
}
