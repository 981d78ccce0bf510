package aws

import (
	"fmt"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
	"sortie/schema"
)

// ebs is the root volume a disk_tier asks for.
type ebs struct {
	volumeType       types.VolumeType
	iops, throughput int32 // 0: the type's default
}

// ebsFor maps resources.disk_tier to EBS as SkyPilot maps it: low is
// standard (magnetic), medium gp3 at 3500 IOPS, high gp3 at 7000, ultra
// io2 at 20000; gp3's throughput is IOPS/16 MiB/s. best is ultra, which
// every instance type can attach. "" is gp3 at its defaults.
func ebsFor(tier string) (ebs, error) {
	switch tier {
	case "":
		return ebs{volumeType: types.VolumeTypeGp3}, nil
	case "low":
		return ebs{volumeType: types.VolumeTypeStandard}, nil
	case "medium":
		return ebs{types.VolumeTypeGp3, 3500, 3500 / 16}, nil
	case "high":
		return ebs{types.VolumeTypeGp3, 7000, 7000 / 16}, nil
	case "ultra", "best":
		return ebs{volumeType: types.VolumeTypeIo2, iops: 20000}, nil
	}
	return ebs{}, provision.Prechecks(fmt.Errorf("resources.disk_tier: %q is not a disk tier; give low, medium, high, ultra or best", tier))
}

// EBS limits the tiers run into: IOPS per GiB of gp3 and io2, and the
// size of a standard volume.
const (
	iopsPerGiB     = 500
	maxStandardGiB = 1024
)

// rootVolume is the root device of the instances: disk_size and disk_tier
// on the image's root device; nil when neither is asked. Without
// disk_size the volume has the image's size, grown to what the tier's
// IOPS need; an explicit disk_size too small for them is refused.
func rootVolume(r schema.Resources, img types.Image) (*types.BlockDeviceMapping, error) {
	if r.DiskSize == 0 && r.DiskTier == "" {
		return nil, nil
	}
	v, err := ebsFor(r.DiskTier)
	if err != nil {
		return nil, err
	}
	device := awssdk.ToString(img.RootDeviceName)
	if device == "" {
		device = "/dev/sda1"
	}
	dev := &types.EbsBlockDevice{VolumeType: v.volumeType, DeleteOnTermination: awssdk.Bool(true)}
	need := (v.iops + iopsPerGiB - 1) / iopsPerGiB
	size := int32(r.DiskSize)
	switch {
	case size > 0 && size < need:
		return nil, provision.Prechecks(fmt.Errorf("resources.disk_size: %d GB is too small for disk_tier %s on aws (EBS %s at %d IOPS needs at least %d GB); raise disk_size or lower disk_tier",
			size, r.DiskTier, v.volumeType, v.iops, need))
	case size == 0:
		// The image's own size, or what the IOPS need when that is more;
		// named either way, as a volume type without a size is not taken
		// everywhere EC2's API is spoken.
		size = max(imageSize(img, device), need)
	}
	if v.volumeType == types.VolumeTypeStandard && size > maxStandardGiB {
		return nil, provision.Prechecks(fmt.Errorf("resources.disk_size: %d GB is more than disk_tier low (EBS standard, magnetic) holds on aws (%d GB); use disk_tier medium or a smaller disk_size",
			size, maxStandardGiB))
	}
	if size > 0 {
		dev.VolumeSize = awssdk.Int32(size)
	}
	if v.iops > 0 {
		dev.Iops = awssdk.Int32(v.iops)
	}
	if v.throughput > 0 {
		dev.Throughput = awssdk.Int32(v.throughput)
	}
	return &types.BlockDeviceMapping{DeviceName: awssdk.String(device), Ebs: dev}, nil
}

// imageSize is the size in GiB of the image's root volume, 0 if unknown.
func imageSize(img types.Image, device string) int32 {
	for _, m := range img.BlockDeviceMappings {
		if awssdk.ToString(m.DeviceName) == device && m.Ebs != nil {
			return awssdk.ToInt32(m.Ebs.VolumeSize)
		}
	}
	return 0
}

// efa reports whether the instance type has an Elastic Fabric Adapter,
// AWS's best networking.
func efa(t types.InstanceTypeInfo) bool {
	return t.NetworkInfo != nil && awssdk.ToBool(t.NetworkInfo.EfaSupported)
}

// checkNetworkTier says whether resources.network_tier asks for the best
// network: on AWS, as SkyPilot does, an EFA interface, which the instance
// type must have. Without EFA, SkyPilot quietly launches the standard
// network; sortie refuses instead.
func checkNetworkTier(tier string, t *types.InstanceTypeInfo) (bool, error) {
	switch tier {
	case "", "standard":
		return false, nil
	case "best":
		if t == nil || efa(*t) {
			return true, nil
		}
		return false, provision.Prechecks(fmt.Errorf("resources.network_tier: best (an EFA interface) is not offered for %s on aws; pick an instance type with EFA (e.g. c5n.18xlarge, g4dn.8xlarge, p4d.24xlarge), leave instance_type out for sortie to pick one, or use network_tier standard",
			t.InstanceType))
	}
	return false, provision.Prechecks(fmt.Errorf("resources.network_tier: %q is not a network tier; give standard or best", tier))
}
