package gcp

import (
	"context"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
	"sortie/provision/internal/testenv"
	"sortie/schema"
)

func TestInsertWithTheSameRequestIDMakesOneVM(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	s := spec(10, 1, "us-central1-a", spot())
	_, types, err := p.catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mt, _, _ := resolveType(types["us-central1-a"], s.Resources)
	in := mustInstance(t, p, s, "us-central1-a", mt, 0)
	t.Cleanup(func() { p.Terminate(context.Background(), s.Name) })

	first, err := p.insert(ctx, "us-central1-a", in)
	if err != nil {
		t.Fatal(err)
	}
	// The same request again, as after an answer lost on the way back.
	second, err := p.insert(ctx, "us-central1-a", in)
	if err != nil {
		t.Fatal(err)
	}
	if first.GetName() != second.GetName() {
		t.Errorf("second insert got operation %s, want the first's %s", second.GetName(), first.GetName())
	}
	if n := len(e.fake.Instances()); n != 1 {
		t.Errorf("%d VMs after inserting twice with one request id, want 1", n)
	}
}

// A controller that died between inserting rank 0 and rank 1 launches
// again: rank 0 is found by label and only rank 1 is inserted.
func TestLaunchAfterACrashInsertsOnlyTheMissingRanks(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	s := spec(11, 2, "us-central1-a", spot())
	_, types, _ := p.catalog(ctx)
	mt, _, _ := resolveType(types["us-central1-a"], s.Resources)
	if _, err := p.insert(ctx, "us-central1-a", mustInstance(t, p, s, "us-central1-a", mt, 0)); err != nil {
		t.Fatal(err)
	}
	restarted := e.provider(t)
	e.fake.ResetCalls()
	c := launch(t, restarted, s)
	if got := e.fake.Calls("instances.insert"); got != 1 {
		t.Errorf("%d inserts, want 1 (rank 1 only)", got)
	}
	if len(c.Nodes) != 2 || c.Nodes[0].State != provision.NodeRunning || c.Nodes[1].State != provision.NodeRunning {
		t.Errorf("cluster %s, want two running nodes", describeCluster(c))
	}
}

// A stockout's failed insert must not be replayed by its request id when
// the same cluster is launched in the same zone later.
func TestRelaunchAfterAStockoutAsksAfresh(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	s := spec(12, 2, "us-east1-b", spot())
	e.fake.SetCapacity("us-east1-b", false)
	if _, err := p.Launch(ctx, s); provision.Classify(err) != provision.ClassCapacity {
		t.Fatalf("Launch in a stocked-out zone = %v, want capacity", err)
	}
	e.fake.SetCapacity("us-east1-b", true)
	c := launch(t, p, s)
	if len(c.Nodes) != 2 {
		t.Fatalf("relaunch: %s", describeCluster(c))
	}
	if n := len(e.fake.Instances()); n != 2 {
		t.Errorf("%d VMs, want 2", n)
	}
}

func TestStatusIsOneListForManyClusters(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	zones := []string{"us-central1-a", "us-central1-b", "us-east1-b", "us-east1-c", "us-central1-c", "us-central1-a"}
	var names []string
	for i, z := range zones {
		s := spec(int64(20+i), 2, z, spot())
		launch(t, p, s)
		names = append(names, s.Name)
	}
	ctx := testContext(t)

	e.fake.ResetCalls()
	m, err := p.Status(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != len(names) {
		t.Errorf("Status returned %d clusters, want %d", len(m), len(names))
	}
	if diff := cmp.Diff(map[string]int{"instances.aggregatedList": 1}, e.fake.AllCalls()); diff != "" {
		t.Errorf("calls for Status of %d running clusters (-want +got):\n%s", len(names), diff)
	}

	// Two preemptions in two clusters: the reasons cost one more call, not
	// one per cluster.
	for _, i := range []int{1, 4} {
		if err := e.fake.Preempt(zones[i], instanceName(names[i], 1)); err != nil {
			t.Fatal(err)
		}
	}
	e.fake.ResetCalls()
	m, err = p.Status(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"instances.aggregatedList": 1, "globalOperations.aggregatedList": 1}
	if diff := cmp.Diff(want, e.fake.AllCalls()); diff != "" {
		t.Errorf("calls for Status with preemptions (-want +got):\n%s", diff)
	}
	for i, name := range names {
		want := provision.NodeRunning
		if i == 1 || i == 4 {
			want = provision.NodePreempted
		}
		if got := m[name].Nodes[1].State; got != want {
			t.Errorf("%s node 1 is %s, want %s: %s", name, got, want, describeCluster(m[name]))
		}
		if got := m[name].Nodes[0].State; got != provision.NodeRunning {
			t.Errorf("%s node 0 is %s, want running", name, got)
		}
	}
}

func TestStatusReadsEveryPage(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{PageSize: 2})
	p := e.provider(t)
	var names []string
	for i := range 3 {
		s := spec(int64(30+i), 2, "us-central1-a", spot())
		launch(t, p, s)
		names = append(names, s.Name)
	}
	e.fake.ResetCalls()
	m, err := p.Status(testContext(t), names)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if c := m[name]; c == nil || len(c.Nodes) != 2 || c.Nodes[1].State != provision.NodeRunning {
			t.Errorf("%s: %v", name, c)
		}
	}
	if got := e.fake.Calls("instances.aggregatedList"); got != 3 {
		t.Errorf("%d list pages, want 3 (6 VMs, 2 a page)", got)
	}
}

// The library's Operation.Wait reports success for an operation that
// finished with an error (when the API sets no HTTP error status on it);
// sortie's own wait reads the error and classifies it.
func TestWaitCatchesTheErrorThatLibraryWaitMisses(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	e.fake.SetCapacity("us-central1-b", false)

	lib, err := compute.NewInstancesRESTClient(ctx, option.WithEndpoint(e.fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	s := spec(40, 1, "us-central1-b", spot())
	_, types, _ := p.catalog(ctx)
	mt, _, _ := resolveType(types["us-central1-b"], s.Resources)
	op, err := lib.Insert(ctx, &computepb.InsertInstanceRequest{
		Project: e.fake.Project(), Zone: "us-central1-b", InstanceResource: mustInstance(t, p, s, "us-central1-b", mt, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatalf("library Wait = %v; this test documents that it returns nil here", err)
	}
	if op.Proto().GetError() == nil {
		t.Fatal("the finished operation carries no error")
	}

	running, err := lib.Insert(ctx, &computepb.InsertInstanceRequest{
		Project: e.fake.Project(), Zone: "us-central1-b", InstanceResource: mustInstance(t, p, spec(41, 1, "us-central1-b", spot()), "us-central1-b", mt, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = p.wait(ctx, "us-central1-b", running.Proto())
	if provision.Classify(err) != provision.ClassCapacity {
		t.Errorf("wait = %v, want a capacity error", err)
	}
}

func TestRestartFindsVMsByLabel(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	first := e.provider(t)
	a := launch(t, first, spec(50, 2, "us-central1-a", spot()))
	b := launch(t, first, spec(51, 1, "us-east1-c", spot()))

	restarted := e.provider(t)
	ctx := testContext(t)
	all, err := restarted.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	for _, c := range all {
		found[c.Name] = testenv.InstanceIDs(c)
	}
	want := map[string][]string{a.Name: testenv.InstanceIDs(a), b.Name: testenv.InstanceIDs(b)}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("List after a restart (-launched +found):\n%s", diff)
	}
	e.fake.ResetCalls()
	again := launch(t, restarted, spec(50, 2, "us-central1-a", spot()))
	if diff := cmp.Diff(testenv.InstanceIDs(a), testenv.InstanceIDs(again)); diff != "" {
		t.Errorf("relaunch after a restart (-first +again):\n%s", diff)
	}
	if n := e.fake.Calls("instances.insert"); n != 0 {
		t.Errorf("relaunch after a restart inserted %d VMs", n)
	}

	// The orphan b is the controller's to terminate; a second restart
	// still sees that sortie deleted it, not the cloud.
	if err := restarted.Terminate(ctx, b.Name); err != nil {
		t.Fatal(err)
	}
	third := e.provider(t)
	m, err := third.Status(ctx, []string{b.Name})
	if err != nil {
		t.Fatal(err)
	}
	if c := m[b.Name]; c == nil || !allTerminated(c) {
		t.Errorf("Status of a cluster sortie deleted, after a restart: %v", m[b.Name])
	}
}

// Each way a node can end is told apart, also by a provider that did not
// see it happen.
func TestNodeFates(t *testing.T) {
	for _, action := range []string{TerminateDelete, TerminateStop} {
		t.Run(action, func(t *testing.T) {
			e := newEnv(t, false, gcpfake.Options{})
			withAction := func(c *Config) { c.TerminationAction = action }
			p := e.provider(t, withAction)
			s := spec(60, 3, "us-east1-b", spot())
			launch(t, p, s)
			if err := e.fake.Preempt("us-east1-b", instanceName(s.Name, 0)); err != nil {
				t.Fatal(err)
			}
			if err := e.fake.Remove("us-east1-b", instanceName(s.Name, 1)); err != nil {
				t.Fatal(err)
			}
			ctx := testContext(t)
			states := func(p *Provider) []provision.NodeState {
				t.Helper()
				m, err := p.Status(ctx, []string{s.Name})
				if err != nil {
					t.Fatal(err)
				}
				var out []provision.NodeState
				for _, n := range m[s.Name].Nodes {
					out = append(out, n.State)
				}
				return out
			}
			want := []provision.NodeState{provision.NodePreempted, provision.NodeGone, provision.NodeRunning}
			if diff := cmp.Diff(want, states(e.provider(t, withAction))); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
			if err := p.Terminate(ctx, s.Name); err != nil {
				t.Fatal(err)
			}
			// Rank 0 was preempted before sortie deleted it (STOP) or was
			// gone already (DELETE).
			want = []provision.NodeState{provision.NodePreempted, provision.NodeGone, provision.NodeTerminated}
			if action == TerminateStop {
				want[0] = provision.NodeTerminated
			}
			if diff := cmp.Diff(want, states(e.provider(t, withAction))); diff != "" {
				t.Errorf("states after Terminate, seen after a restart (-want +got):\n%s", diff)
			}
		})
	}
}

// A VM stopped by someone else is stopped; a spot VM found TERMINATED is
// preempted even when its preemption operation has expired.
func TestStoppedVMs(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	stop := func(c *Config) { c.TerminationAction = TerminateStop }
	p := e.provider(t, stop)
	onDemand := spec(70, 1, "us-central1-a", schema.Resources{Cloud: CloudName})
	spotVM := spec(71, 1, "us-central1-a", spot())
	spotStopped := spec(73, 1, "us-central1-a", spot())
	launch(t, p, onDemand)
	launch(t, p, spotVM)
	launch(t, p, spotStopped)
	if err := e.fake.Stop("us-central1-a", instanceName(onDemand.Name, 0)); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Stop("us-central1-a", instanceName(spotStopped.Name, 0)); err != nil {
		t.Fatal(err)
	}
	m, err := p.Status(testContext(t), []string{spotStopped.Name})
	if err != nil {
		t.Fatal(err)
	}
	if n := m[spotStopped.Name].Nodes[0]; n.State != provision.NodeStopped || !strings.Contains(n.Reason, "someone@example.com") {
		t.Errorf("spot VM stopped by someone: %s %q, want stopped, naming who", n.State, n.Reason)
	}
	if err := e.fake.Preempt("us-central1-a", instanceName(spotVM.Name, 0)); err != nil {
		t.Fatal(err)
	}
	e.fake.ForgetOperations()
	m, err = e.provider(t, stop).Status(testContext(t), []string{onDemand.Name, spotVM.Name})
	if err != nil {
		t.Fatal(err)
	}
	if n := m[onDemand.Name].Nodes[0]; n.State != provision.NodeStopped || !strings.Contains(n.Reason, "TERMINATED") {
		t.Errorf("on-demand VM stopped by someone: %s %q, want stopped", n.State, n.Reason)
	}
	if n := m[spotVM.Name].Nodes[0]; n.State != provision.NodePreempted {
		t.Errorf("spot VM TERMINATED: %s %q, want preempted", n.State, n.Reason)
	}
}

// A placement naming only a region launches in its first zone.
func TestLaunchInARegion(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	s := spec(72, 1, "us-east1-b", spot())
	s.Placement.Zone = ""
	c := launch(t, p, s)
	if c.Placement.Zone != "us-east1-b" {
		t.Errorf("launched at %s, want us-east1-b", c.Placement)
	}
}

// With StatusMaxAge set, the controller's ticks, each asking about a shard
// of the jobs, share one list of VMs (and of operations, when a VM must be
// explained) per max age; sortie's own launch or termination makes the
// next Status list afresh.
func TestStatusIsSharedWithinItsMaxAge(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := e.provider(t, func(c *Config) {
		c.StatusMaxAge = 5 * time.Second
		c.Now = func() time.Time { return now }
	})
	var names []string
	for i, z := range []string{"us-central1-a", "us-east1-b", "us-central1-b"} {
		s := spec(int64(60+i), 1, z, spot())
		launch(t, p, s)
		names = append(names, s.Name)
	}
	ctx := testContext(t)
	status := func(names ...string) map[string]*provision.Cluster {
		t.Helper()
		m, err := p.Status(ctx, names)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	calls := func(step string, want map[string]int) {
		t.Helper()
		if diff := cmp.Diff(want, e.fake.AllCalls()); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", step, diff)
		}
		e.fake.ResetCalls()
	}
	list := map[string]int{"instances.aggregatedList": 1}
	none := map[string]int{}

	e.fake.ResetCalls()
	status(names[0])
	status(names[1], names[2])
	now = now.Add(4 * time.Second)
	status(names...)
	calls("three shards within the max age", list)

	now = now.Add(time.Second)
	status(names[0])
	calls("the max age passed", list)

	// A preemption the shared list has not seen yet is seen once it is old.
	if err := e.fake.Preempt("us-east1-b", instanceName(names[1], 0)); err != nil {
		t.Fatal(err)
	}
	e.fake.ResetCalls()
	if got := status(names[1])[names[1]].Nodes[0].State; got != provision.NodeRunning {
		t.Errorf("within the max age node is %s, want the shared answer (running)", got)
	}
	calls("within the max age", none)
	now = now.Add(5 * time.Second)
	for range 3 {
		if got := status(names[1])[names[1]].Nodes[0].State; got != provision.NodePreempted {
			t.Errorf("after the max age node is %s, want preempted", got)
		}
	}
	calls("a preemption explained for three shards", map[string]int{"instances.aggregatedList": 1, "globalOperations.aggregatedList": 1})

	// sortie's own termination: the next Status lists afresh.
	if err := p.Terminate(ctx, names[2]); err != nil {
		t.Fatal(err)
	}
	e.fake.ResetCalls()
	status(names[0])
	if got := e.fake.Calls("instances.aggregatedList"); got != 1 {
		t.Errorf("after a termination: %d lists of VMs, want 1", got)
	}
}
