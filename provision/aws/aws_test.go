package aws

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/provision"
	"sortie/provision/internal/testenv"
	"sortie/provision/node"
	"sortie/provision/sshrun"
	"sortie/schema"
)

// A spot launch in a zone without capacity fails at once as a capacity
// error, leaves nothing behind, and the same cluster then launches in the
// next zone the caller picks.
func TestSpotLaunchMovesToNextZone(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	e.proxy.SetCapacity("us-east-1a", false)

	s := spec(201, 2, zone("us-east-1a"), spot())
	t.Cleanup(func() { p.Terminate(context.Background(), s.Name) })
	_, err := p.Launch(ctx, s)
	if provision.Classify(err) != provision.ClassCapacity {
		t.Fatalf("Launch in a zone without capacity: %v (class %s), want a capacity error", err, provision.Classify(err))
	}
	if !strings.Contains(err.Error(), "InsufficientInstanceCapacity") || !strings.Contains(err.Error(), "us-east-1a") {
		t.Errorf("error %q should name the EC2 code and the zone", err)
	}
	if n := e.proxy.Calls("RunInstances", "us-east-1"); n != 1 {
		t.Errorf("RunInstances called %d times, want 1: capacity errors must not be retried by the SDK", n)
	}
	if m, err := p.Status(ctx, []string{s.Name}); err != nil || len(m) != 0 {
		t.Errorf("after a failed launch Status = %v, %v; want the cluster absent", m, err)
	}

	s.Placement = zone("us-east-1b")
	c := launch(t, p, s)
	if c.Placement.Zone != "us-east-1b" || len(c.Nodes) != 2 {
		t.Fatalf("launched at %s with %d nodes, want us-east-1b with 2", c.Placement, len(c.Nodes))
	}
	raw, err := testenv.Call(ctx, e.moto.URL, "us-east-1", "DescribeInstances", map[string]string{"InstanceId.1": c.Nodes[0].InstanceID})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<instanceLifecycle>spot</instanceLifecycle>", "<availabilityZone>us-east-1b</availabilityZone>",
		"<key>Name</key><value>" + s.Name + "-0</value>"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("moto's view of node 0 lacks %s", want)
		}
	}
}

// Status asks each region once, however many clusters it is asked about.
func TestStatusIsOneCallPerRegion(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	var names []string
	for i, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-west-2a", "us-west-2b"} {
		s := spec(int64(300+i), 1+i%2, zone(z), spot())
		launch(t, p, s)
		names = append(names, s.Name)
	}
	e.proxy.ResetCalls()
	m, err := p.Status(ctx, append(names, provision.ClusterName(399, 0, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, region := range []string{"us-east-1", "us-west-2"} {
		if n := e.proxy.Calls("DescribeInstances", region); n != 1 {
			t.Errorf("Status of %d clusters called DescribeInstances %d times in %s, want 1", len(names), n, region)
		}
	}
	if n := e.proxy.Calls("DescribeInstances", ""); n != 2 {
		t.Errorf("DescribeInstances calls in all = %d, want 2", n)
	}
	if len(m) != len(names) {
		t.Errorf("Status found %d clusters, want %d", len(m), len(names))
	}
	for i, name := range names {
		c := m[name]
		if c == nil || len(c.Nodes) != 1+i%2 || c.Nodes[0].State != provision.NodeRunning {
			t.Errorf("%s: %+v, want %d running nodes", name, c, 1+i%2)
		}
	}
}

// A provider built after a controller restart finds the instances by tag
// and never runs a second set for the same attempt.
func TestRestartedProviderFindsClustersByTag(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	first := e.provider(t)
	s := spec(401, 2, zone("us-west-2b"), spot())
	launched := launch(t, first, s)

	second := e.provider(t)
	all, err := second.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(all, func(c *provision.Cluster) bool { return c.Name == s.Name })
	if i < 0 {
		t.Fatalf("restarted provider's List lacks %s: %v", s.Name, all)
	}
	if diff := cmp.Diff(testenv.InstanceIDs(launched), testenv.InstanceIDs(all[i])); diff != "" {
		t.Errorf("List (-launched +listed):\n%s", diff)
	}
	if all[i].Tags[provision.TagJob] != "1" || all[i].Placement != zone("us-west-2b") {
		t.Errorf("listed cluster tags %v at %s", all[i].Tags, all[i].Placement)
	}
	again, err := second.Launch(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(testenv.InstanceIDs(launched), testenv.InstanceIDs(again)); diff != "" {
		t.Errorf("relaunch after restart (-first +again):\n%s", diff)
	}
	if n := e.proxy.Calls("RunInstances", ""); n != 1 {
		t.Errorf("RunInstances called %d times for one attempt, want 1", n)
	}
	if err := second.Terminate(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if all, _ := first.List(ctx); slices.ContainsFunc(all, func(c *provision.Cluster) bool { return c.Name == s.Name }) {
		t.Errorf("List still shows %s after Terminate", s.Name)
	}
}

// A launch that fails after RunInstances terminates what it started.
func TestFailedLaunchLeavesNothingRunning(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	s := spec(501, 2, zone("us-east-1c"), spot())
	e.proxy.FailNext("CreateTags", "InternalError", "An internal error has occurred.")
	_, err := p.Launch(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "InternalError") {
		t.Fatalf("Launch with a failing CreateTags: %v, want the InternalError", err)
	}
	if n := e.proxy.Calls("TerminateInstances", "us-east-1"); n != 1 {
		t.Errorf("TerminateInstances called %d times, want 1", n)
	}
	m, err := p.Status(ctx, []string{s.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range m[s.Name].Nodes {
		if n.State != provision.NodeTerminated {
			t.Errorf("node %d is %s after the failed launch, want terminated", n.Rank, n.State)
		}
	}
	// The name launches again, with new instances.
	c := launch(t, p, s)
	for _, n := range c.Nodes {
		if slices.ContainsFunc(m[s.Name].Nodes, func(old provision.Node) bool { return old.InstanceID == n.InstanceID }) {
			t.Errorf("relaunch returned the terminated instance %s", n.InstanceID)
		}
	}
}

// Errors no retry can fix are prechecks, quotas are capacity, and neither
// leaves an instance.
func TestLaunchErrorsAreClassified(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	tests := []struct {
		name   string
		r      schema.Resources
		inject string // EC2 error code RunInstances returns
		want   provision.ErrorClass
	}{
		{name: "unknown instance type", r: schema.Resources{InstanceType: "x9.huge"}, want: provision.ClassPrechecks},
		{name: "unknown image", r: schema.Resources{InstanceType: "t3.micro", ImageID: "ami-0000000000000dead"}, want: provision.ClassPrechecks},
		{name: "no type fits", r: schema.Resources{CPUs: "100000"}, want: provision.ClassPrechecks},
		{name: "auth", r: spot(), inject: "AuthFailure", want: provision.ClassPrechecks},
		{name: "unauthorized", r: spot(), inject: "UnauthorizedOperation", want: provision.ClassPrechecks},
		{name: "quota", r: spot(), inject: "InstanceLimitExceeded", want: provision.ClassCapacity},
		{name: "spot capacity", r: spot(), inject: "capacity-not-available", want: provision.ClassCapacity},
		{name: "spot count", r: spot(), inject: "MaxSpotInstanceCountExceeded", want: provision.ClassCapacity},
		{name: "throttled", r: spot(), inject: "RequestLimitExceeded", want: provision.ClassTransient},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec(int64(600+i), 1, zone("us-east-1d"), tt.r)
			if tt.inject != "" {
				e.proxy.FailNext("RunInstances", tt.inject, "injected "+tt.inject)
			}
			_, err := p.Launch(ctx, s)
			if err == nil {
				p.Terminate(ctx, s.Name)
				t.Fatal("Launch succeeded")
			}
			if got := provision.Classify(err); got != tt.want {
				t.Errorf("Launch error %q classified %s, want %s", err, got, tt.want)
			}
			if m, _ := p.Status(ctx, []string{s.Name}); m[s.Name] != nil {
				t.Errorf("a failed launch left %+v", m[s.Name])
			}
		})
	}
}

// The cloud's reasons become node states: the proxy rewrites what moto says.
func TestStatusReadsStateReasons(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	c := launch(t, p, spec(701, 8, zone("us-west-2c"), spot()))
	marks := []struct{ state, code string }{
		{"terminated", ReasonSpotTermination},
		{"terminated", ReasonUserShutdown},
		{"terminated", ""},
		{"stopped", ReasonUserShutdown},
		{"running", ""},
		{"stopped", ReasonSpotShutdown},
		{"terminated", ReasonServerInternalError},
		{"terminated", ReasonInsufficientCapacity},
	}
	for i, m := range marks {
		e.proxy.MarkInstance(c.Nodes[i].InstanceID, m.state, m.code, m.code)
	}
	got, err := p.Status(ctx, []string{c.Name})
	if err != nil {
		t.Fatal(err)
	}
	var states []provision.NodeState
	for _, n := range got[c.Name].Nodes {
		states = append(states, n.State)
	}
	want := []provision.NodeState{provision.NodePreempted, provision.NodeTerminated, provision.NodeGone, provision.NodeStopped, provision.NodeRunning,
		provision.NodePreempted, provision.NodeGone, provision.NodeGone}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("node states (-want +got):\n%s", diff)
	}
	if r := got[c.Name].Nodes[0].Reason; r != ReasonSpotTermination {
		t.Errorf("preempted node's reason = %q", r)
	}
}

// A node whose host key changed under the same instance id is refused.
func TestRunnerRefusesChangedHostKey(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	p := e.provider(t)
	c := launch(t, p, spec(801, 1, zone("us-east-1a"), spot())) // pins the key

	impostor := testenv.StartSSHD(t)
	_, line, err := sshrun.LoadOrCreateKey(e.home + "/keys")
	if err != nil {
		t.Fatal(err)
	}
	impostor.Authorize(t, line)
	other := e.provider(t, func(c *Config) { c.ProxyCommand = impostor.ProxyCommand })
	_, err = other.Runner(ctx, c, 0)
	var mismatch *sshrun.HostKeyMismatchError
	if !errors.As(err, &mismatch) || mismatch.ID != c.Nodes[0].InstanceID {
		t.Fatalf("Runner to a node with another host key: %v, want a HostKeyMismatchError for %s", err, c.Nodes[0].InstanceID)
	}
	r, err := p.Runner(ctx, c, 0)
	if err != nil {
		t.Fatalf("Runner to the real node: %v", err)
	}
	defer r.Close()
	out, err := r.Exec(ctx, `printf %s "$PWD"`, nil)
	if err != nil || string(out) == "" {
		t.Errorf("Exec = %q, %v", out, err)
	}
	if want := e.nodes + "/" + c.Nodes[0].InstanceID; r.Dir() != want {
		t.Errorf("Dir = %q, want %q", r.Dir(), want)
	}
}

// A spot interruption takes the node's processes with it: the agent dies
// without an exit code, as it would with the VM, and Status says preempted.
func TestSpotInterruptionKillsTheTask(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	c := launch(t, p, spec(1001, 1, zone("us-east-1b"), spot()))
	r, err := p.Runner(ctx, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A sleep no other test runs, since pgrep below looks at the whole machine.
	if err := node.Start(ctx, r, node.StartSpec{Run: "sleep 299.917"}); err != nil {
		t.Fatal(err)
	}
	if st, err := node.Poll(ctx, r); err != nil || !st.AgentAlive {
		t.Fatalf("before the interruption: %+v, %v; want the agent alive", st, err)
	}
	id := c.Nodes[0].InstanceID
	if err := e.proxy.SpotInterrupt(ctx, "us-east-1", id); err != nil {
		t.Fatal(err)
	}
	if n := testenv.KillNodeProcesses(filepath.Join(e.nodes, id)); n == 0 {
		t.Fatal("KillNodeProcesses found nothing to kill")
	}
	m, err := p.Status(ctx, []string{c.Name})
	if err != nil || m[c.Name].Nodes[0].State != provision.NodePreempted {
		t.Fatalf("Status after the interruption: %+v, %v; want preempted", m[c.Name], err)
	}
	// The agent is gone, its task too, and no exit code was written.
	for i := 0; ; i++ {
		st, err := node.Poll(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if !st.AgentAlive && !st.Done {
			break
		}
		if i == 200 {
			t.Fatalf("after KillNodeProcesses: %+v; want a dead agent and no exit code", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err := r.Exec(ctx, `pgrep -x -f "sleep 299.917" || true`, nil)
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("the task's sleep survived: %q, %v", out, err)
	}
}

// Two launches of one name at once (a retry racing the first try) run one
// set of instances.
func TestConcurrentLaunchesOfOneName(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	s := spec(1101, 2, zone("us-west-2d"), spot())
	t.Cleanup(func() { p.Terminate(context.Background(), s.Name) })
	results := make(chan *provision.Cluster, 2)
	for range 2 {
		go func() {
			c, err := p.Launch(ctx, s)
			if err != nil {
				t.Error(err)
			}
			results <- c
		}()
	}
	a, b := <-results, <-results
	if a == nil || b == nil {
		t.FailNow()
	}
	if diff := cmp.Diff(testenv.InstanceIDs(a), testenv.InstanceIDs(b)); diff != "" {
		t.Errorf("concurrent launches returned different instances (-a +b):\n%s", diff)
	}
	if n := e.proxy.Calls("RunInstances", ""); n != 1 {
		t.Errorf("RunInstances called %d times, want 1", n)
	}
}

// A launch whose nodes refuse sortie's key says why it waits, try after
// try; cancelling it stops it at once and terminates its instances.
func TestLaunchStuckOnSSHSaysWhyAndStopsWhenCancelled(t *testing.T) {
	e := newEnv(t)
	refusing := testenv.StartSSHD(t) // sortie's key is not authorized there
	p := e.provider(t, func(c *Config) {
		c.ProxyCommand = refusing.ProxyCommand
		c.LaunchTimeout = 10 * time.Minute
	})
	s := spec(1201, 1, zone("us-east-1a"), spot())
	t.Cleanup(func() { p.Terminate(context.Background(), s.Name) })
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	said := make(chan string, 100)
	pctx := provision.WithProgress(ctx, func(msg string) {
		select {
		case said <- msg:
		default:
		}
	})
	result := make(chan error, 1)
	go func() {
		_, err := p.Launch(pctx, s)
		result <- err
	}()
	want := "waiting for SSH on node 0: unable to authenticate (the node does not accept sortie's key; `sortie check` prints it), try 2"
	for seen := false; !seen; {
		select {
		case msg := <-said:
			seen = msg == want
			if !strings.HasPrefix(msg, "waiting for") {
				t.Fatalf("progress %q, want what the launch waits for", msg)
			}
		case err := <-result:
			t.Fatalf("the launch ended (%v) before saying %q", err, want)
		case <-time.After(time.Minute):
			t.Fatalf("the launch never said %q", want)
		}
	}
	cancel()
	select {
	case err := <-result:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled launch: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled launch goes on")
	}
	if n := e.proxy.Calls("TerminateInstances", "us-east-1"); n != 1 {
		t.Errorf("TerminateInstances called %d times, want 1", n)
	}
	m, err := p.Status(context.Background(), []string{s.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range m[s.Name].Nodes {
		if n.State != provision.NodeTerminated {
			t.Errorf("node %d is %s after the cancelled launch, want terminated", n.Rank, n.State)
		}
	}
}
