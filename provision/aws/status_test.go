package aws

import (
	"context"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
	"sortie/provision/internal/testenv"
	"sortie/provision/vm"
)

// countingEC2 answers DescribeInstances with one running instance per
// cluster name, counting the calls; a call waits for release when set.
type countingEC2 struct {
	ec2API
	mu      sync.Mutex
	calls   int
	names   []string
	release chan struct{}
	entered chan struct{}
}

func (f *countingEC2) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	f.mu.Lock()
	f.calls++
	names := f.names
	release, entered := f.release, f.entered
	f.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if release != nil {
		<-release
	}
	var r types.Reservation
	for i, n := range names {
		r.Instances = append(r.Instances, types.Instance{
			InstanceId: awssdk.String("i-" + n),
			State:      &types.InstanceState{Name: types.InstanceStateNameRunning},
			Tags: []types.Tag{{Key: awssdk.String(provision.TagManaged), Value: awssdk.String("true")},
				{Key: awssdk.String(provision.TagCluster), Value: awssdk.String(n)}},
			AmiLaunchIndex: awssdk.Int32(int32(i)),
		})
	}
	return &ec2.DescribeInstancesOutput{Reservations: []types.Reservation{r}}, nil
}

func (f *countingEC2) TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	return &ec2.TerminateInstancesOutput{}, nil
}

func (f *countingEC2) DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	return &ec2.DescribeSecurityGroupsOutput{}, nil
}

func (f *countingEC2) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// sharedStatusProvider is a provider of one region whose EC2 is fake and
// whose clock the test moves.
func sharedStatusProvider(api *countingEC2, now *time.Time, maxAge time.Duration) *Provider {
	cfg := withDefaults(Config{Home: "unused", Regions: []string{"us-east-1"}, StatusMaxAge: maxAge,
		Now: func() time.Time { return *now }, Logger: testenv.QuietLogger()})
	return &Provider{cfg: cfg, log: cfg.Logger, clients: map[string]ec2API{"us-east-1": api}, cache: newCache(),
		status: &vm.Shared[map[string]*provision.Cluster]{MaxAge: maxAge, Now: cfg.Now}}
}

// Status calls for many jobs within StatusMaxAge share one
// DescribeInstances per region; a call in flight is joined, not repeated;
// sortie's own termination makes the next Status ask afresh.
func TestStatusIsSharedWithinItsMaxAge(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	api := &countingEC2{names: []string{"a", "b"}}
	p := sharedStatusProvider(api, &now, 10*time.Second)
	for i := range 100 {
		name := []string{"a", "b"}[i%2]
		got, err := p.Status(ctx, []string{name})
		if err != nil || got[name] == nil || got[name].Nodes[0].State != provision.NodeRunning {
			t.Fatalf("Status(%s) = %v, %v", name, got, err)
		}
		got[name].Nodes[0].State = provision.NodeGone // never seen by the next caller
	}
	if n := api.count(); n != 1 {
		t.Errorf("100 Status calls within the max age made %d DescribeInstances, want 1", n)
	}
	now = now.Add(9 * time.Second)
	if got, _ := p.Status(ctx, []string{"a"}); api.count() != 1 || got["a"].Nodes[0].State != provision.NodeRunning {
		t.Errorf("at 9s: %d calls, node %s; want the shared answer, unchanged", api.count(), got["a"].Nodes[0].State)
	}
	now = now.Add(time.Second)
	p.Status(ctx, []string{"a"})
	if n := api.count(); n != 2 {
		t.Errorf("at the max age: %d calls, want a second one", n)
	}
	if err := p.Terminate(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	after := api.count()
	p.Status(ctx, []string{"a"})
	if n := api.count(); n != after+1 {
		t.Errorf("Status after sortie's Terminate made %d calls, want a fresh one", n-after)
	}

	// Callers that come while the call is in flight wait for it.
	api = &countingEC2{names: []string{"a"}, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	p = sharedStatusProvider(api, &now, 10*time.Second)
	var wg sync.WaitGroup
	first := make(chan struct{})
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i > 0 {
				<-first
			}
			if got, err := p.Status(ctx, []string{"a"}); err != nil || got["a"] == nil {
				t.Errorf("Status = %v, %v", got, err)
			}
		}()
	}
	<-api.entered
	close(first)
	close(api.release)
	wg.Wait()
	if n := api.count(); n != 1 {
		t.Errorf("20 Status calls during one DescribeInstances made %d, want 1", n)
	}

	// Without a max age, every Status asks.
	api = &countingEC2{names: []string{"a"}}
	p = sharedStatusProvider(api, &now, 0)
	p.Status(ctx, []string{"a"})
	p.Status(ctx, []string{"a"})
	if n := api.count(); n != 2 {
		t.Errorf("without a max age: %d calls, want 2", n)
	}
}
