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
