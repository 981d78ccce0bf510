package aws

import (
	"testing"

	"sortie/provision"
	"sortie/provision/internal/testenv"
)

// Every EC2 call is told once, after the SDK's retries, with its error.
func TestEveryEC2CallIsCounted(t *testing.T) {
	e := newEnv(t)
	log := &testenv.CallLog{}
	p := e.provider(t, func(c *Config) { c.Calls = log.Calls })
	ctx := testContext(t)
	e.proxy.ResetCalls()
	if _, err := p.Status(ctx, []string{provision.ClusterName(1, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if log.OK("DescribeInstances") != 2 || e.proxy.Calls("DescribeInstances", "") != 2 {
		t.Errorf("status of two regions: %d DescribeInstances counted, the proxy saw %d; want 2 and 2",
			log.OK("DescribeInstances"), e.proxy.Calls("DescribeInstances", ""))
	}
	e.proxy.FailNext("RunInstances", "InsufficientInstanceCapacity", "injected")
	if _, err := p.Launch(ctx, spec(700, 1, zone("us-east-1a"), spot())); err == nil {
		t.Fatal("Launch succeeded despite the injected capacity error")
	}
	if log.Failed("RunInstances") != 1 || log.OK("RunInstances") != 0 {
		t.Errorf("RunInstances counted ok %d, failed %d; want 0 and 1", log.OK("RunInstances"), log.Failed("RunInstances"))
	}
}
