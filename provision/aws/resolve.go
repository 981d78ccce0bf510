package aws

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
	"sortie/provision/fit"
	"sortie/provision/imagetag"
	"sortie/schema"
)

// gpus is a type's accelerators as name -> count.
func gpus(t types.InstanceTypeInfo) map[string]int {
	out := map[string]int{}
	if t.GpuInfo != nil {
		for _, g := range t.GpuInfo.Gpus {
			out[strings.ToLower(awssdk.ToString(g.Name))] += int(awssdk.ToInt32(g.Count))
		}
	}
	if t.InferenceAcceleratorInfo != nil {
		for _, a := range t.InferenceAcceleratorInfo.Accelerators {
			out[strings.ToLower(awssdk.ToString(a.Name))] += int(awssdk.ToInt32(a.Count))
		}
	}
	return out
}

func vcpus(t types.InstanceTypeInfo) float64 {
	if t.VCpuInfo == nil {
		return 0
	}
	return float64(awssdk.ToInt32(t.VCpuInfo.DefaultVCpus))
}

func memoryGiB(t types.InstanceTypeInfo) float64 {
	if t.MemoryInfo == nil {
		return 0
	}
	return float64(awssdk.ToInt64(t.MemoryInfo.SizeInMiB)) / 1024
}

func architectures(t types.InstanceTypeInfo) []types.ArchitectureType {
	if t.ProcessorInfo == nil {
		return nil
	}
	return t.ProcessorInfo.SupportedArchitectures
}

// launchable reports whether sortie would launch t at all: a current
// generation x86-64 type, not bare metal, sold as spot or on demand as asked.
func launchable(t types.InstanceTypeInfo, spot bool) bool {
	usage := types.UsageClassTypeOnDemand
	if spot {
		usage = types.UsageClassTypeSpot
	}
	return slices.Contains(t.SupportedUsageClasses, usage) && !awssdk.ToBool(t.BareMetal) &&
		awssdk.ToBool(t.CurrentGeneration) && slices.Contains(architectures(t), types.ArchitectureTypeX8664)
}

// smallestType picks, among the launchable types, the smallest that fits
// r's cpus, memory and accelerators (see fit.Smallest for the order).
// Accelerator names are EC2's, compared without case.
func smallestType(all []types.InstanceTypeInfo, r schema.Resources) (types.InstanceTypeInfo, bool, error) {
	req, err := fit.ParseRequest(r, fit.SameName)
	if err != nil {
		return types.InstanceTypeInfo{}, false, err
	}
	byName := map[string]types.InstanceTypeInfo{}
	var offers []fit.Offer
	for _, t := range all {
		// network_tier best needs EFA: pick among the types that have it.
		if launchable(t, r.UseSpot) && (r.NetworkTier != "best" || efa(t)) {
			name := string(t.InstanceType)
			byName[name] = t
			offers = append(offers, fit.Offer{Name: name, CPUs: vcpus(t), MemoryGiB: memoryGiB(t), Accelerators: gpus(t)})
		}
	}
	o, ok := fit.Smallest(offers, req)
	return byName[o.Name], ok, nil
}

// instanceTypes lists every instance type of a region, once per provider.
func (p *Provider) instanceTypes(ctx context.Context, region string) ([]types.InstanceTypeInfo, error) {
	if all, ok := lookup(&p.cache, p.cache.types, region); ok {
		return all, nil
	}
	var all []types.InstanceTypeInfo
	pages := ec2.NewDescribeInstanceTypesPaginator(p.client(region), &ec2.DescribeInstanceTypesInput{})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, classify(fmt.Errorf("list instance types in %s: %w", region, err))
		}
		all = append(all, out.InstanceTypes...)
	}
	store(&p.cache, p.cache.types, region, all)
	return all, nil
}

// resolveType returns the instance type to launch for r in region. A named
// type is described alone: listing every type is a large answer, only
// needed to pick one by cpus, memory and accelerators.
func (p *Provider) resolveType(ctx context.Context, region string, r schema.Resources) (types.InstanceTypeInfo, error) {
	if r.InstanceType != "" {
		return p.namedType(ctx, region, r.InstanceType)
	}
	all, err := p.instanceTypes(ctx, region)
	if err != nil {
		return types.InstanceTypeInfo{}, err
	}
	t, ok, err := smallestType(all, r)
	if err != nil {
		return types.InstanceTypeInfo{}, provision.Prechecks(err)
	}
	if !ok {
		return types.InstanceTypeInfo{}, provision.Prechecks(fmt.Errorf(
			"no EC2 instance type in %s has cpus %s, memory %s GB and accelerators %v%s%s; relax the request or set resources.instance_type",
			region, orAny(r.CPUs), orAny(r.Memory), r.Accelerators, map[bool]string{true: " as spot", false: ""}[r.UseSpot],
			map[bool]string{true: " with EFA (network_tier best)", false: ""}[r.NetworkTier == "best"]))
	}
	return t, nil
}

func (p *Provider) namedType(ctx context.Context, region, name string) (types.InstanceTypeInfo, error) {
	key := region + "/" + name
	if t, ok := lookup(&p.cache, p.cache.types, key); ok {
		return t[0], nil
	}
	unknown := provision.Prechecks(fmt.Errorf(
		"resources.instance_type: %q is not an EC2 instance type in %s; pick one from `aws ec2 describe-instance-types`", name, region))
	out, err := p.client(region).DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{types.InstanceType(name)},
	})
	if code := apiCode(err); code == "InvalidInstanceType" || (code == "InvalidParameterValue" && strings.Contains(err.Error(), name)) {
		return types.InstanceTypeInfo{}, unknown
	}
	if err != nil {
		return types.InstanceTypeInfo{}, classify(fmt.Errorf("describe instance type %s in %s: %w", name, region, err))
	}
	if len(out.InstanceTypes) == 0 {
		return types.InstanceTypeInfo{}, unknown
	}
	store(&p.cache, p.cache.types, key, out.InstanceTypes[:1])
	return out.InstanceTypes[0], nil
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

// zones lists a region's available zones, once per provider.
func (p *Provider) zones(ctx context.Context, region string) ([]string, error) {
	if z, ok := lookup(&p.cache, p.cache.zones, region); ok {
		return z, nil
	}
	out, err := p.client(region).DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return nil, classify(fmt.Errorf("list zones of %s: %w", region, err))
	}
	var zones []string
	for _, z := range out.AvailabilityZones {
		if z.State != types.AvailabilityZoneStateAvailable {
			continue
		}
		if zt := awssdk.ToString(z.ZoneType); zt != "" && zt != "availability-zone" {
			continue // local and wavelength zones need opting in and other networking
		}
		zones = append(zones, awssdk.ToString(z.ZoneName))
	}
	sort.Strings(zones)
	store(&p.cache, p.cache.zones, region, zones)
	return zones, nil
}

// offeredZones lists the zones of a region that offer an instance type.
func (p *Provider) offeredZones(ctx context.Context, region, instanceType string) ([]string, error) {
	key := region + "/" + instanceType
	if z, ok := lookup(&p.cache, p.cache.offerings, key); ok {
		return z, nil
	}
	var zones []string
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.client(region), &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: types.LocationTypeAvailabilityZone,
		Filters:      []types.Filter{{Name: awssdk.String("instance-type"), Values: []string{instanceType}}},
	})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, classify(fmt.Errorf("list zones offering %s in %s: %w", instanceType, region, err))
		}
		for _, o := range out.InstanceTypeOfferings {
			zones = append(zones, awssdk.ToString(o.Location))
		}
	}
	sort.Strings(zones)
	store(&p.cache, p.cache.offerings, key, zones)
	return zones, nil
}

// Placements implements provision.Provider: the zones of the configured
// regions (or the one region or zone r pins) that offer the instance type r
// resolves to, regions in configured order, zones by name.
func (p *Provider) Placements(ctx context.Context, r schema.Resources) ([]schema.Placement, error) {
	if r.Cloud != "" && r.Cloud != CloudName {
		return nil, nil
	}
	regions := p.cfg.Regions
	switch {
	case r.Region != "":
		if !p.knownRegion(r.Region) {
			if r.Cloud == "" {
				return nil, nil // asked of every cloud; not one of ours
			}
			return nil, provision.Prechecks(fmt.Errorf("resources.region: %q is not among the AWS regions sortie uses (%s); add it to aws.regions in config.yaml",
				r.Region, strings.Join(p.cfg.Regions, ", ")))
		}
		regions = []string{r.Region}
	case r.Zone != "":
		regions = nil
		for _, reg := range p.cfg.Regions {
			if strings.HasPrefix(r.Zone, reg) {
				regions = append(regions, reg)
			}
		}
	}
	var out []schema.Placement
	for _, region := range regions {
		t, err := p.resolveType(ctx, region, r)
		if err != nil {
			return nil, err
		}
		zones, err := p.zones(ctx, region)
		if err != nil {
			return nil, err
		}
		offered, err := p.offeredZones(ctx, region, string(t.InstanceType))
		if err != nil {
			return nil, err
		}
		for _, z := range zones {
			if (r.Zone == "" || r.Zone == z) && slices.Contains(offered, z) {
				out = append(out, schema.Placement{Cloud: CloudName, Region: region, Zone: z})
			}
		}
	}
	if r.Zone != "" && len(out) == 0 && r.Cloud == CloudName {
		return nil, provision.Prechecks(fmt.Errorf("resources.zone: %q is not an available zone offering the instance type in the AWS regions sortie uses (%s)",
			r.Zone, strings.Join(p.cfg.Regions, ", ")))
	}
	return out, nil
}

// Canonical's account, which publishes the official Ubuntu images.
const canonicalOwner = "099720109477"

// image returns the image to boot: r.ImageID, else (none, or a docker:
// container image) the newest Ubuntu LTS image for the architecture in the
// region.
func (p *Provider) image(ctx context.Context, region string, r schema.Resources, arch types.ArchitectureType) (types.Image, error) {
	if strings.HasPrefix(r.ImageID, "docker:") {
		// A container image: the instance boots the default image and the
		// task runs in the container there (see node.Container).
		r.ImageID = ""
	}
	if tag, ok := imagetag.Parse(r.ImageID); ok {
		return p.taggedImage(ctx, region, r.ImageID, tag, arch)
	}
	key := region + "/" + r.ImageID
	if r.ImageID == "" {
		key = region + "/" + string(arch)
	}
	if img, ok := lookup(&p.cache, p.cache.images, key); ok {
		return img, nil
	}
	api := p.client(region)
	var img types.Image
	if r.ImageID != "" {
		out, err := api.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{r.ImageID}})
		if err != nil {
			return img, classify(fmt.Errorf("resources.image_id: look up %s in %s: %w", r.ImageID, region, err))
		}
		if len(out.Images) == 0 {
			return img, provision.Prechecks(fmt.Errorf("resources.image_id: %s does not exist in %s; images are per region", r.ImageID, region))
		}
		img = out.Images[0]
	} else {
		a := "amd64"
		if arch == types.ArchitectureTypeArm64 {
			a = "arm64"
		}
		out, err := api.DescribeImages(ctx, &ec2.DescribeImagesInput{
			Owners: []string{canonicalOwner},
			Filters: []types.Filter{
				{Name: awssdk.String("name"), Values: []string{"ubuntu/images/hvm-ssd*/ubuntu-*-" + a + "-server-*"}},
				{Name: awssdk.String("state"), Values: []string{"available"}},
			},
		})
		if err != nil {
			return img, classify(fmt.Errorf("look up the default Ubuntu image in %s: %w", region, err))
		}
		var ok bool
		if img, ok = preferredUbuntu(out.Images); !ok {
			return img, provision.Prechecks(fmt.Errorf("no Ubuntu %s image from Canonical in %s; set resources.image_id", a, region))
		}
	}
	store(&p.cache, p.cache.images, key, img)
	return img, nil
}

// tagLifetime is how long the image a tag resolved to is used before the
// cloud is asked again: publishers add images every few weeks, so a
// controller that runs for months moves to the newer ones.
const tagLifetime = 6 * time.Hour

// resolvedTag is an image a SkyPilot tag resolved to, and when.
type resolvedTag struct {
	img types.Image
	at  time.Time
}

// taggedImage resolves the SkyPilot image tag of image (skypilot:TAG) in
// region for arch: the newest available image of the tag's publisher whose
// name matches the tag's pattern (imagetag.AWS), cached per region, tag
// and architecture for tagLifetime. A tag EC2 has no image for, or no
// image found, is a prechecks error: no placement can fix it.
func (p *Provider) taggedImage(ctx context.Context, region, image, tag string, arch types.ArchitectureType) (types.Image, error) {
	look, ok := imagetag.AWS()[tag]
	if !ok {
		return types.Image{}, provision.Prechecks(fmt.Errorf("resources.image_id: %w", imagetag.Unknown(image, CloudName, imagetag.Names(imagetag.AWS()))))
	}
	key := region + "/" + tag + "/" + string(arch)
	now := p.cfg.Now()
	if got, ok := lookup(&p.cache, p.cache.tags, key); ok && now.Sub(got.at) < tagLifetime {
		return got.img, nil
	}
	name := look.NameFor(string(arch))
	out, err := p.client(region).DescribeImages(ctx, &ec2.DescribeImagesInput{
		Owners: []string{look.Owner},
		Filters: []types.Filter{
			{Name: awssdk.String("name"), Values: []string{name}},
			{Name: awssdk.String("architecture"), Values: []string{string(arch)}},
			{Name: awssdk.String("state"), Values: []string{"available"}},
		},
	})
	if err != nil {
		return types.Image{}, classify(fmt.Errorf("resources.image_id: look up %s (%s) in %s: %w", image, look.Describe(), region, err))
	}
	if len(out.Images) == 0 {
		return types.Image{}, provision.Prechecks(fmt.Errorf("resources.image_id: %s: account %s publishes no %s image named %s in %s; give an image id (ami-...) instead",
			image, look.Owner, arch, name, region))
	}
	img := newestImage(out.Images)
	store(&p.cache, p.cache.tags, key, resolvedTag{img: img, at: now})
	p.logger(ctx).Info("image tag resolved", "image_id", image, "region", region, "image", awssdk.ToString(img.ImageId),
		"name", awssdk.ToString(img.Name), "created", awssdk.ToString(img.CreationDate))
	return img, nil
}

// newestImage is the image created last, by CreationDate, then name.
func newestImage(imgs []types.Image) types.Image {
	return slices.MaxFunc(imgs, func(a, b types.Image) int {
		if c := strings.Compare(awssdk.ToString(a.CreationDate), awssdk.ToString(b.CreationDate)); c != 0 {
			return c
		}
		return strings.Compare(awssdk.ToString(a.Name), awssdk.ToString(b.Name))
	})
}

// preferredUbuntu picks the newest image of the most recent LTS release it
// knows, else the newest image of any release.
func preferredUbuntu(images []types.Image) (types.Image, bool) {
	if len(images) == 0 {
		return types.Image{}, false
	}
	newest := newestImage
	for _, lts := range []string{"-noble-24.04-", "-jammy-22.04-"} {
		var match []types.Image
		for _, img := range images {
			if strings.Contains(awssdk.ToString(img.Name), lts) {
				match = append(match, img)
			}
		}
		if len(match) > 0 {
			return newest(match), true
		}
	}
	return newest(images), true
}
