package gcp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
	"sortie/schema"
)

func TestLaunchBuildsTheVMsAsAsked(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t, func(c *Config) { c.TerminationAction = TerminateStop })
	s := spec(1, 2, "us-east1-c", schema.Resources{Cloud: CloudName, UseSpot: true, CPUs: "4+", DiskSize: 120})
	c := launch(t, p, s)
	if c.Placement.Zone != "us-east1-c" || c.Placement.Region != "us-east1" {
		t.Errorf("placement %s, want gcp/us-east1/us-east1-c", c.Placement)
	}
	for rank := range 2 {
		in := e.fake.Instance("us-east1-c", instanceName(s.Name, rank))
		if in == nil {
			t.Fatalf("no VM %s", instanceName(s.Name, rank))
		}
		if got := lastSegment(in.GetMachineType()); got != "e2-standard-4" {
			t.Errorf("machine type %s, want e2-standard-4 (the smallest with 4+ CPUs and no GPU)", got)
		}
		sch := in.GetScheduling()
		if sch.GetProvisioningModel() != "SPOT" || sch.GetInstanceTerminationAction() != "STOP" || sch.GetAutomaticRestart() {
			t.Errorf("scheduling %v, want SPOT with STOP and no automatic restart", sch)
		}
		want := map[string]string{
			provision.TagManaged: "true", provision.TagCluster: s.Name, provision.TagJob: "1",
			provision.TagTask: "0", provision.TagAttempt: "1", provision.TagRank: fmt.Sprint(rank), labelNumNodes: "2",
		}
		if diff := cmp.Diff(want, in.GetLabels()); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
		items := in.GetMetadata().GetItems()
		if len(items) != 1 || items[0].GetKey() != "ssh-keys" || !strings.HasPrefix(items[0].GetValue(), "sortie:ssh-ed25519 ") {
			t.Errorf("metadata %v, want ssh-keys with sortie:ssh-ed25519 ...", items)
		}
		if c.Nodes[rank].IP == "" || c.Nodes[rank].IP == "127.0.0.1" {
			t.Errorf("node %d IP %q, want the internal address peers use", rank, c.Nodes[rank].IP)
		}
	}
}

func TestLaunchOnDemandWithAnImageAndType(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	r := schema.Resources{Cloud: CloudName, InstanceType: "n2-highmem-4",
		ImageID: "projects/debian-cloud/global/images/family/debian-12"}
	s := spec(2, 1, "us-central1-b", r)
	launch(t, p, s)
	in := e.fake.Instance("us-central1-b", instanceName(s.Name, 0))
	if got := lastSegment(in.GetMachineType()); got != "n2-highmem-4" {
		t.Errorf("machine type %s, want n2-highmem-4", got)
	}
	if sch := in.GetScheduling(); sch.GetProvisioningModel() != "STANDARD" || sch.GetInstanceTerminationAction() != "" {
		t.Errorf("scheduling %v, want STANDARD without a termination action", sch)
	}
}

func TestLaunchPrechecks(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	for _, tc := range []struct {
		name string
		r    schema.Resources
		want string
	}{
		{"unknown image", schema.Resources{Cloud: CloudName, ImageID: "projects/nobody/global/images/nope"}, "was not found"},
		{"unknown machine type", schema.Resources{Cloud: CloudName, InstanceType: "z9-huge-1"}, "does not offer machine type \"z9-huge-1\""},
		{"no type fits", schema.Resources{Cloud: CloudName, CPUs: "1000+"}, "does not offer a machine type with cpus 1000+"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(3, 2, "us-central1-a", tc.r)
			_, err := p.Launch(ctx, s)
			if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Fatalf("Launch = %v (%s), want a prechecks error with %q", err, provision.Classify(err), tc.want)
			}
			if n := len(e.fake.Instances()); n != 0 {
				t.Errorf("a failed launch left %d VMs", n)
			}
		})
	}
	if _, err := p.Placements(ctx, schema.Resources{Cloud: CloudName, InstanceType: "z9-huge-1"}); provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("Placements of an unknown machine type = %v, want a prechecks error", err)
	}
	if ps, err := p.Placements(ctx, schema.Resources{InstanceType: "z9-huge-1"}); err != nil || len(ps) != 0 {
		t.Errorf("Placements for any cloud of an unknown machine type = %v, %v; want none and no error", ps, err)
	}
}

func TestLaunchHTTPErrorsAreClassified(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	e.fake.FailNext("instances.insert", 403, "forbidden", "Required 'compute.instances.create' permission for 'projects/sortie-test'")
	if _, err := p.Launch(ctx, spec(4, 1, "us-central1-a", spot())); provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("Launch denied by IAM = %v, want prechecks", err)
	}
	e.fake.FailNext("instances.insert", 403, "quotaExceeded", "Quota 'PREEMPTIBLE_CPUS' exceeded.  Limit: 8.0 in region us-central1.")
	if _, err := p.Launch(ctx, spec(5, 1, "us-central1-a", spot())); provision.Classify(err) != provision.ClassCapacity {
		t.Errorf("Launch over quota = %v, want capacity", err)
	}
	e.fake.FailInserts("us-central1-a", "QUOTA_EXCEEDED", "Quota 'CPUS' exceeded.  Limit: 24.0 in region us-central1.")
	if _, err := p.Launch(ctx, spec(6, 2, "us-central1-a", spot())); provision.Classify(err) != provision.ClassCapacity {
		t.Errorf("Launch whose operation failed on quota = %v, want capacity", err)
	}
	if n := len(e.fake.Instances()); n != 0 {
		t.Errorf("failed launches left %d VMs", n)
	}
}

// A failure in the middle of a cluster: the first VMs are created, the
// third insert fails; none may be left running.
func TestPartialLaunchIsCleanedUp(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	s := spec(7, 3, "us-central1-c", spot())
	e.fake.FailCall("instances.insert", 3, 503, "ZONE_RESOURCE_POOL_EXHAUSTED", "The zone 'projects/sortie-test/zones/us-central1-c' does not have enough resources available to fulfill the request.")
	_, err := p.Launch(ctx, s)
	if provision.Classify(err) != provision.ClassCapacity {
		t.Fatalf("Launch with the third VM stocked out = %v, want capacity", err)
	}
	if got := e.fake.Calls("instances.insert"); got != 3 {
		t.Errorf("%d inserts, want 3", got)
	}
	if got := e.fake.Calls("instances.delete"); got != 2 {
		t.Errorf("%d deletes, want 2 (the VMs created before the failure)", got)
	}
	for _, in := range e.fake.Instances() {
		t.Errorf("left behind: %s %s", in.GetName(), in.GetStatus())
	}
	m, err := p.Status(ctx, []string{s.Name})
	if err != nil {
		t.Fatal(err)
	}
	if c := m[s.Name]; c != nil && !allTerminated(c) {
		t.Errorf("Status after the failed launch: %s", describeCluster(c))
	}
}

func allTerminated(c *provision.Cluster) bool {
	for _, n := range c.Nodes {
		if n.State != provision.NodeTerminated {
			return false
		}
	}
	return true
}

func describeCluster(c *provision.Cluster) string {
	s := c.Placement.String()
	for _, n := range c.Nodes {
		s += fmt.Sprintf(" [%d %s %s %s]", n.Rank, n.InstanceID, n.State, n.Reason)
	}
	return s
}

// The controller moves a failed launch to the next zone under the same
// cluster name: what the first zone left is not taken for the cluster.
func TestFailoverToAnotherZoneKeepsTheName(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	s := spec(8, 2, "us-central1-a", spot())
	e.fake.FailCall("instances.insert", 2, 403, "quotaExceeded", "Quota 'PREEMPTIBLE_CPUS' exceeded.  Limit: 2.0 in region us-central1.")
	if _, err := p.Launch(ctx, s); provision.Classify(err) != provision.ClassCapacity {
		t.Fatalf("first launch = %v, want capacity", err)
	}
	s.Placement = schema.Placement{Cloud: CloudName, Region: "us-east1", Zone: "us-east1-c"}
	c := launch(t, p, s)
	if c.Placement.Zone != "us-east1-c" || len(c.Nodes) != 2 {
		t.Fatalf("failover launch: %s", describeCluster(c))
	}
	for _, in := range e.fake.Instances() {
		if lastSegment(in.GetZone()) != "us-east1-c" {
			t.Errorf("VM %s left in %s", in.GetName(), lastSegment(in.GetZone()))
		}
	}
}
