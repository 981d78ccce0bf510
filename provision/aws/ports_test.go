package aws

import (
	"slices"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
	"sortie/schema"
)

// groupsNamed lists the security groups of a name in region, as EC2 sees them.
func groupsNamed(t *testing.T, p *Provider, region, name string) []types.SecurityGroup {
	t.Helper()
	out, err := p.client(region).DescribeSecurityGroups(testContext(t), &ec2.DescribeSecurityGroupsInput{
		Filters: []types.Filter{{Name: awssdk.String("group-name"), Values: []string{name}}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.SecurityGroups
}

// A cluster with ports gets a security group of its own that opens them,
// and loses it when it is terminated.
func TestPortsOpenAndCloseWithTheCluster(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	r := spot()
	r.Ports = []string{"8080", "10000-10010"}
	s := spec(961, 2, zone("us-east-1b"), r)
	c := launch(t, p, s)

	groups := groupsNamed(t, p, "us-east-1", portsGroupName(s.Name))
	if len(groups) != 1 {
		t.Fatalf("found %d groups named %s, want 1", len(groups), portsGroupName(s.Name))
	}
	g := groups[0]
	var opened []string
	for _, perm := range g.IpPermissions {
		for _, ip := range perm.IpRanges {
			opened = append(opened, awssdk.ToString(perm.IpProtocol)+" "+provision.PortRange{
				From: int(awssdk.ToInt32(perm.FromPort)), To: int(awssdk.ToInt32(perm.ToPort))}.String()+" "+awssdk.ToString(ip.CidrIp))
		}
	}
	slices.Sort(opened)
	if want := []string{"tcp 10000-10010 0.0.0.0/0", "tcp 8080 0.0.0.0/0"}; !slices.Equal(opened, want) {
		t.Errorf("group opens %v, want %v", opened, want)
	}
	if tags := tagMap(g.Tags); tags[provision.TagCluster] != s.Name || tags[provision.TagManaged] != "true" {
		t.Errorf("group tags %v, want the cluster's", tags)
	}
	raw, err := p.client("us-east-1").DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{c.Nodes[0].InstanceID, c.Nodes[1].InstanceID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range raw.Reservations {
		for _, in := range res.Instances {
			var ids []string
			for _, sg := range in.SecurityGroups {
				ids = append(ids, awssdk.ToString(sg.GroupId))
			}
			if !slices.Contains(ids, awssdk.ToString(g.GroupId)) || len(ids) != 2 {
				t.Errorf("instance %s is in groups %v, want sortie's and %s", awssdk.ToString(in.InstanceId), ids, awssdk.ToString(g.GroupId))
			}
		}
	}

	// EC2 refuses to delete a group while a shutting-down instance still
	// uses it; Terminate waits and tries again.
	e.proxy.FailNext("DeleteSecurityGroup", "DependencyViolation", "resource "+awssdk.ToString(g.GroupId)+" has a dependent object")
	e.proxy.ResetCalls()
	if err := p.Terminate(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if n := e.proxy.Calls("DeleteSecurityGroup", "us-east-1"); n != 2 {
		t.Errorf("DeleteSecurityGroup called %d times, want 2 (refused while in use, then done)", n)
	}
	if left := groupsNamed(t, p, "us-east-1", portsGroupName(s.Name)); len(left) != 0 {
		t.Errorf("Terminate left the ports group: %v", left)
	}
	if left := groupsNamed(t, p, "us-east-1", SecurityGroupName); len(left) != 1 {
		t.Errorf("sortie's SSH group should stay: %v", left)
	}
}

// A launch that fails deletes the group it made; a group a crash left
// behind without instances goes at the next List.
func TestPortsGroupsDoNotLeak(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	r := spot()
	r.Ports = []string{"8888"}

	e.proxy.SetCapacity("us-east-1a", false)
	failed := spec(962, 1, zone("us-east-1a"), r)
	if _, err := p.Launch(ctx, failed); provision.Classify(err) != provision.ClassCapacity {
		t.Fatalf("Launch without capacity = %v, want a capacity error", err)
	}
	if left := groupsNamed(t, p, "us-east-1", portsGroupName(failed.Name)); len(left) != 0 {
		t.Errorf("a failed launch left its ports group: %v", left)
	}

	crashed := provision.ClusterName(963, 0, 1)
	if _, err := p.ensurePortsGroup(ctx, "us-west-2", crashed, []provision.PortRange{{From: 80, To: 80}}); err != nil {
		t.Fatal(err)
	}
	running := spec(964, 1, zone("us-west-2a"), r)
	launch(t, p, running)
	if _, err := e.provider(t).List(ctx); err != nil {
		t.Fatal(err)
	}
	if left := groupsNamed(t, p, "us-west-2", portsGroupName(crashed)); len(left) != 0 {
		t.Errorf("List left the group of a cluster that has no instance: %v", left)
	}
	if kept := groupsNamed(t, p, "us-west-2", portsGroupName(running.Name)); len(kept) != 1 {
		t.Errorf("List deleted the group of a running cluster: %v", kept)
	}

	e.proxy.ResetCalls()
	bad := r
	bad.Ports = []string{"http"}
	_, err := p.Launch(ctx, spec(965, 1, zone("us-east-1a"), bad))
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), `resources.ports[0]: "http"`) {
		t.Fatalf("Launch with a bad port = %v, want a prechecks error naming it", err)
	}
	if n := e.proxy.Calls("CreateSecurityGroup", ""); n != 0 {
		t.Errorf("a launch with a bad port made %d security groups", n)
	}
}

// image_id docker:IMAGE is a container image for the task, never an AMI:
// the instance boots the default Ubuntu image.
func TestDockerImageBootsTheDefaultAMI(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	r := spot()
	r.ImageID = "docker:ubuntu:24.04"
	in, err := p.runInput(ctx, spec(966, 1, zone("us-east-1a"), r), 0)
	if err != nil {
		t.Fatal(err)
	}
	def, err := p.image(ctx, "us-east-1", schema.Resources{}, "x86_64")
	if err != nil {
		t.Fatal(err)
	}
	if awssdk.ToString(in.ImageId) != awssdk.ToString(def.ImageId) {
		t.Errorf("RunInstances image %s, want the default %s", awssdk.ToString(in.ImageId), awssdk.ToString(def.ImageId))
	}
	if n := e.proxy.Calls("DescribeImages", ""); n != 1 {
		t.Errorf("DescribeImages called %d times, want once (for the default image, never for docker:...)", n)
	}
}
