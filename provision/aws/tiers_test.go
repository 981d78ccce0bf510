package aws

import (
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
	"sortie/schema"
)

func TestRootVolumeFollowsTheTier(t *testing.T) {
	img := types.Image{RootDeviceName: awssdk.String("/dev/sda1"), BlockDeviceMappings: []types.BlockDeviceMapping{
		{DeviceName: awssdk.String("/dev/sda1"), Ebs: &types.EbsBlockDevice{VolumeSize: awssdk.Int32(8)}}}}
	for _, tc := range []struct {
		tier              string
		size              int
		vtype             types.VolumeType
		gb, iops, thruput int32 // 0: not set
		err               string
	}{
		{tier: "", size: 100, vtype: "gp3", gb: 100},
		{tier: "low", vtype: "standard", gb: 8},
		{tier: "low", size: 500, vtype: "standard", gb: 500},
		{tier: "low", size: 2000, err: "disk_tier low (EBS standard, magnetic) holds on aws (1024 GB)"},
		{tier: "medium", vtype: "gp3", gb: 8, iops: 3500, thruput: 218},
		{tier: "high", vtype: "gp3", gb: 14, iops: 7000, thruput: 437}, // grown past the image's 8 GB
		{tier: "high", size: 256, vtype: "gp3", gb: 256, iops: 7000, thruput: 437},
		{tier: "ultra", vtype: "io2", gb: 40, iops: 20000},
		{tier: "best", size: 100, vtype: "io2", gb: 100, iops: 20000},
		{tier: "ultra", size: 20, err: "resources.disk_size: 20 GB is too small for disk_tier ultra on aws (EBS io2 at 20000 IOPS needs at least 40 GB)"},
		{tier: "fast", err: `resources.disk_tier: "fast" is not a disk tier`},
	} {
		m, err := rootVolume(schema.Resources{DiskTier: tc.tier, DiskSize: tc.size}, img)
		if tc.err != "" {
			if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %d GB: %v, want a prechecks error with %q", tc.tier, tc.size, err, tc.err)
			}
			continue
		}
		if err != nil || m == nil || awssdk.ToString(m.DeviceName) != "/dev/sda1" {
			t.Fatalf("%q %d GB: %+v, %v", tc.tier, tc.size, m, err)
		}
		e := m.Ebs
		if e.VolumeType != tc.vtype || awssdk.ToInt32(e.VolumeSize) != tc.gb || awssdk.ToInt32(e.Iops) != tc.iops ||
			awssdk.ToInt32(e.Throughput) != tc.thruput || !awssdk.ToBool(e.DeleteOnTermination) {
			t.Errorf("%q %d GB: %s %d GB %d IOPS %d MiB/s, want %s %d GB %d IOPS %d MiB/s", tc.tier, tc.size, e.VolumeType,
				awssdk.ToInt32(e.VolumeSize), awssdk.ToInt32(e.Iops), awssdk.ToInt32(e.Throughput), tc.vtype, tc.gb, tc.iops, tc.thruput)
		}
	}
	if m, err := rootVolume(schema.Resources{}, img); m != nil || err != nil {
		t.Errorf("no disk_size nor disk_tier: %+v, %v; want the image's own root volume", m, err)
	}
}

func TestBestNetworkNeedsEFA(t *testing.T) {
	plain := fakeType("m6i.large", 2, 8192, "", 0)
	withEFA := fakeType("c5n.18xlarge", 72, 196608, "", 0)
	withEFA.NetworkInfo = &types.NetworkInfo{EfaSupported: awssdk.Bool(true)}
	for _, tc := range []struct {
		tier string
		t    types.InstanceTypeInfo
		want bool
		err  string
	}{
		{"", plain, false, ""},
		{"standard", withEFA, false, ""},
		{"best", withEFA, true, ""},
		{"best", plain, false, "best (an EFA interface) is not offered for m6i.large on aws"},
		{"fastest", plain, false, `resources.network_tier: "fastest" is not a network tier`},
	} {
		got, err := checkNetworkTier(tc.tier, &tc.t)
		if tc.err != "" {
			if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q on %s: %v, want a prechecks error with %q", tc.tier, tc.t.InstanceType, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q on %s: %v, %v; want %v", tc.tier, tc.t.InstanceType, got, err, tc.want)
		}
	}
	got, ok, err := smallestType([]types.InstanceTypeInfo{plain, withEFA}, schema.Resources{NetworkTier: "best"})
	if err != nil || !ok || got.InstanceType != "c5n.18xlarge" {
		t.Errorf("smallestType for network_tier best = %s, %v, %v; want c5n.18xlarge, the one with EFA", got.InstanceType, ok, err)
	}
}

// The tiers reach RunInstances: the root volume's type and IOPS, and an
// EFA interface that carries the security groups; what the type cannot
// have is refused before RunInstances.
func TestTiersReachRunInstances(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	r := schema.Resources{Cloud: "aws", InstanceType: "c5n.18xlarge", DiskTier: "high", NetworkTier: "best", Ports: []string{"6006"}}
	s := spec(971, 2, zone("us-east-1a"), r)
	in, err := p.runInput(ctx, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.BlockDeviceMappings) != 1 || in.BlockDeviceMappings[0].Ebs.VolumeType != "gp3" || awssdk.ToInt32(in.BlockDeviceMappings[0].Ebs.Iops) != 7000 {
		t.Errorf("block devices %+v, want gp3 at 7000 IOPS", in.BlockDeviceMappings)
	}
	if len(in.NetworkInterfaces) != 1 || awssdk.ToString(in.NetworkInterfaces[0].InterfaceType) != "efa" ||
		len(in.NetworkInterfaces[0].Groups) != 2 || len(in.SecurityGroupIds) != 0 {
		t.Errorf("network interfaces %+v, groups %v; want one EFA interface with sortie's group and the ports group", in.NetworkInterfaces, in.SecurityGroupIds)
	}
	// EC2 (moto) takes the request, and the nodes answer SSH through it.
	if c := launch(t, p, s); len(c.Nodes) != 2 {
		t.Errorf("launched %d nodes, want 2", len(c.Nodes))
	}
	e.proxy.ResetCalls()
	for _, bad := range []schema.Resources{
		{Cloud: "aws", InstanceType: "t3.micro", NetworkTier: "best"},
		{Cloud: "aws", InstanceType: "t3.micro", DiskTier: "ultra", DiskSize: 10},
	} {
		_, err := p.Launch(ctx, spec(972, 1, zone("us-east-1a"), bad))
		if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "on aws") {
			t.Errorf("Launch of %+v = %v, want a prechecks error", bad, err)
		}
	}
	if n := e.proxy.Calls("RunInstances", ""); n != 0 {
		t.Errorf("RunInstances called %d times for refused launches", n)
	}
}
