package aws

import (
	"sync"
	"testing"

	"sortie/provision"
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

// Every EC2 call is told once, after the SDK's retries, with its error.
func TestEveryEC2CallIsCounted(t *testing.T) {
	e := newEnv(t)
	log := &callLog{ok: map[string]int{}, failed: map[string]int{}}
	p := e.provider(t, func(c *Config) { c.Calls = log.calls })
	ctx := testContext(t)
	e.proxy.ResetCalls()
	if _, err := p.Status(ctx, []string{provision.ClusterName(1, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if log.ok["DescribeInstances"] != 2 || e.proxy.Calls("DescribeInstances", "") != 2 {
		t.Errorf("status of two regions: %d DescribeInstances counted, the proxy saw %d; want 2 and 2",
			log.ok["DescribeInstances"], e.proxy.Calls("DescribeInstances", ""))
	}
	e.proxy.FailNext("RunInstances", "InsufficientInstanceCapacity", "injected")
	if _, err := p.Launch(ctx, spec(700, 1, zone("us-east-1a"), spot())); err == nil {
		t.Fatal("Launch succeeded despite the injected capacity error")
	}
	if log.failed["RunInstances"] != 1 || log.ok["RunInstances"] != 0 {
		t.Errorf("RunInstances counted ok %d, failed %d; want 0 and 1", log.ok["RunInstances"], log.failed["RunInstances"])
	}
}
