package smoke_tests

import (
	"context"
	"testing"
	"time"

	"sortie/smoke_tests/bench/suite"
)

// The aws group, run small: a few jobs cost as many DescribeInstances a
// minute as one, and the calls were counted at all.
func TestBenchAWS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := suite.RunAWS(ctx, suite.AWSOptions{Home: t.TempDir(), Jobs: []int{1, 5}, Simulated: 20 * time.Second, Progress: progress(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The default 5 s poll interval over 20 s: 4 calls, 12 a minute.
	if r[1] != 12 || r[5] != 12 {
		t.Errorf("DescribeInstances a minute: %v for 1 job, %v for 5; want 12 for both", r[1], r[5])
	}
}

// The ssh group, run small: two nodes watched for a few seconds after a
// short warm-up; each exit ends its first attempt as a user failure, and
// the connections were counted at all (each node's first one, before the
// window, is why a count of zero within it means something).
func TestBenchSSH(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := suite.RunSSH(ctx, suite.SSHOptions{Bin: binary(t), Home: t.TempDir(), Nodes: 2, Warmup: 2 * time.Second,
		Window: 10 * time.Second, Timeout: 2 * time.Minute, Progress: progress(t)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ends["user_failure"] != 2 || len(r.Decisions) != 2 {
		t.Errorf("first attempts ended %v with %d decisions timed; want 2 user_failure", r.Ends, len(r.Decisions))
	}
	if r.Total < 2 {
		t.Errorf("%d SSH connections counted in all for 2 nodes; want at least one each", r.Total)
	}
	if r.Handshakes != 0 {
		t.Errorf("%d SSH handshakes in %s of status checks of 2 nodes; want 0 (a connection kept open per node)", r.Handshakes, 10*time.Second)
	}
}
