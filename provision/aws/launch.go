package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
	"sortie/provision/vm"
)

// SecurityGroupName is the group sortie puts its instances in: SSH in.
const SecurityGroupName = "sortie"

// KeyPairName is the name of sortie's key pair in every region: "sortie-"
// and a fingerprint of the public key, so that two homes with different
// keys never overwrite each other's.
func (p *Provider) KeyPairName() string {
	sum := sha256.Sum256(p.ssh.PublicKey().Marshal())
	return "sortie-" + hex.EncodeToString(sum[:8])
}

// Launch implements provision.Provider. It looks for the cluster by tag
// first, so a cluster that exists (launched before a controller restart) is
// returned rather than launched again; then it runs all nodes in one
// RunInstances whose ClientToken is derived from the name, so a retried
// request cannot double them either.
func (p *Provider) Launch(ctx context.Context, spec provision.ClusterSpec) (*provision.Cluster, error) {
	region := spec.Placement.Region
	where := spec.Placement.String()
	if spec.Name == "" || region == "" || spec.NumNodes < 1 {
		return nil, provision.Prechecks(fmt.Errorf("launch: cluster spec needs a name, a region and num_nodes >= 1 (got %q, %q, %d)",
			spec.Name, where, spec.NumNodes))
	}
	if !p.knownRegion(region) {
		return nil, provision.Prechecks(fmt.Errorf("launch %s: region %s is not among the AWS regions sortie uses (%s); add it to aws.regions",
			spec.Name, region, strings.Join(p.cfg.Regions, ", ")))
	}
	if err := checkLabels(spec.Resources.Labels); err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	if _, err := provision.ParsePorts(spec.Resources.Ports); err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	if _, err := ebsFor(spec.Resources.DiskTier); err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	if _, err := checkNetworkTier(spec.Resources.NetworkTier, nil); err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	defer p.launches.Lock(spec.Name)()
	existing, err := p.describe(ctx, region, tagFilter(provision.TagManaged, "true"), tagFilter(provision.TagCluster, spec.Name))
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	var liveIDs []string
	for _, in := range existing {
		if live(in) {
			liveIDs = append(liveIDs, awssdk.ToString(in.InstanceId))
		}
	}
	if len(liveIDs) > 0 && len(liveIDs) != spec.NumNodes {
		return nil, fmt.Errorf("launch %s: it exists with %d of %d nodes left (%s); terminate it before launching the name again",
			spec.Name, len(liveIDs), spec.NumNodes, strings.Join(liveIDs, ", "))
	}
	if len(liveIDs) > 0 {
		p.logger(ctx).Info("cluster exists; not launching it again", "cluster", spec.Name, "instances", liveIDs)
		return p.waitReady(ctx, region, spec, liveIDs)
	}

	input, err := p.runInput(ctx, spec, len(existing))
	if err != nil {
		return nil, fmt.Errorf("launch %s in %s: %w", spec.Name, where, err)
	}
	// Status must see the new instances, not an answer from before them.
	defer p.status.Forget(region)
	out, err := p.runInstances(ctx, region, input)
	if err != nil {
		err = classify(fmt.Errorf("launch %s in %s: %w", spec.Name, where, err))
		if len(spec.Resources.Ports) > 0 {
			// No instance uses the ports group yet: it goes at once.
			cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if gerr := p.dropPortsGroups(cleanup, region, spec.Name); gerr != nil {
				p.logger(ctx).Error("deleting the ports group of a failed launch", "cluster", spec.Name, "err", gerr)
			}
		}
		return nil, err
	}
	ids := make([]string, 0, len(out.Instances))
	for _, in := range out.Instances {
		ids = append(ids, awssdk.ToString(in.InstanceId))
	}
	p.logger(ctx).Info("launched instances", "cluster", spec.Name, "placement", where, "instances", ids,
		"type", input.InstanceType, "spot", input.InstanceMarketOptions != nil)
	c, err := p.finishLaunch(ctx, region, spec, out.Instances)
	if err != nil {
		// Nothing of a failed launch may stay up: it would cost money and
		// the name's next launch would adopt it.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if terr := p.terminateIDs(cleanup, region, spec.Name, ids); terr != nil {
			p.logger(ctx).Error("cleaning up a failed launch", "cluster", spec.Name, "err", terr)
			return nil, fmt.Errorf("launch %s in %s: %w (and terminating its instances: %v)", spec.Name, where, err, terr)
		}
		if len(spec.Resources.Ports) > 0 {
			if gerr := p.dropPortsGroups(cleanup, region, spec.Name); gerr != nil {
				p.logger(ctx).Error("deleting the ports group of a failed launch", "cluster", spec.Name, "err", gerr)
			}
		}
		return nil, fmt.Errorf("launch %s in %s: %w", spec.Name, where, err)
	}
	return c, nil
}

// finishLaunch tags each node with its rank and waits until all are ready.
func (p *Provider) finishLaunch(ctx context.Context, region string, spec provision.ClusterSpec, instances []types.Instance) (*provision.Cluster, error) {
	if len(instances) != spec.NumNodes {
		return nil, provision.Capacity(fmt.Errorf("EC2 started %d of %d instances", len(instances), spec.NumNodes))
	}
	slices.SortFunc(instances, func(a, b types.Instance) int {
		return int(awssdk.ToInt32(a.AmiLaunchIndex)) - int(awssdk.ToInt32(b.AmiLaunchIndex))
	})
	ids := make([]string, len(instances))
	for rank, in := range instances {
		ids[rank] = awssdk.ToString(in.InstanceId)
		_, err := p.client(region).CreateTags(ctx, &ec2.CreateTagsInput{
			Resources: []string{ids[rank]},
			Tags: []types.Tag{
				{Key: awssdk.String("Name"), Value: awssdk.String(fmt.Sprintf("%s-%d", spec.Name, rank))},
				{Key: awssdk.String(provision.TagRank), Value: awssdk.String(strconv.Itoa(rank))},
			},
		})
		if err != nil {
			return nil, classify(fmt.Errorf("tag %s with rank %d: %w", ids[rank], rank, err))
		}
	}
	return p.waitReady(ctx, region, spec, ids)
}

// runInput builds the RunInstances request. generation counts the
// cluster's earlier, terminated instances, so that a relaunch of the name
// after a failed launch does not hit EC2's memory of the old ClientToken.
func (p *Provider) runInput(ctx context.Context, spec provision.ClusterSpec, generation int) (*ec2.RunInstancesInput, error) {
	region := spec.Placement.Region
	r := spec.Resources
	t, err := p.resolveType(ctx, region, r)
	if err != nil {
		return nil, err
	}
	arch := types.ArchitectureTypeX8664
	if archs := architectures(t); len(archs) > 0 && !slices.Contains(archs, arch) {
		arch = archs[0]
	}
	bestNetwork, err := checkNetworkTier(r.NetworkTier, &t)
	if err != nil {
		return nil, err
	}
	img, err := p.image(ctx, region, r, arch)
	if err != nil {
		return nil, err
	}
	root, err := rootVolume(r, img)
	if err != nil {
		return nil, err
	}
	if err := p.ensureKeyPair(ctx, region); err != nil {
		return nil, err
	}
	group, err := p.ensureSecurityGroup(ctx, region)
	if err != nil {
		return nil, err
	}
	groups := []string{group}
	if len(r.Ports) > 0 {
		ports, err := provision.ParsePorts(r.Ports)
		if err != nil {
			return nil, err
		}
		g, err := p.ensurePortsGroup(ctx, region, spec.Name, ports)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
	}
	tags := []types.Tag{{Key: awssdk.String("Name"), Value: awssdk.String(spec.Name)}}
	for _, k := range slices.Sorted(maps.Keys(spec.Tags)) {
		tags = append(tags, types.Tag{Key: awssdk.String(k), Value: awssdk.String(spec.Tags[k])})
	}
	// The task's labels; checkLabels made sure none is one of sortie's.
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		tags = append(tags, types.Tag{Key: awssdk.String(k), Value: awssdk.String(r.Labels[k])})
	}
	// The cluster tags are what finds the instances again; never leave them
	// to the caller's map.
	for k, v := range map[string]string{provision.TagManaged: "true", provision.TagCluster: spec.Name} {
		if spec.Tags[k] != v {
			tags = append(tags, types.Tag{Key: awssdk.String(k), Value: awssdk.String(v)})
		}
	}
	var profile *types.IamInstanceProfileSpecification
	if spec.Buckets {
		if profile, err = p.instanceProfile(ctx); err != nil {
			return nil, err
		}
	}
	n := int32(spec.NumNodes)
	in := &ec2.RunInstancesInput{
		MinCount:         awssdk.Int32(n),
		MaxCount:         awssdk.Int32(n),
		ImageId:          img.ImageId,
		InstanceType:     t.InstanceType,
		KeyName:          awssdk.String(p.KeyPairName()),
		SecurityGroupIds: groups,
		ClientToken:      awssdk.String(clientToken(spec, generation)),
		TagSpecifications: []types.TagSpecification{
			{ResourceType: types.ResourceTypeInstance, Tags: tags},
			{ResourceType: types.ResourceTypeVolume, Tags: tags},
		},
		// A node that shuts itself down is gone, not a stopped VM billing disk.
		InstanceInitiatedShutdownBehavior: types.ShutdownBehaviorTerminate,
		IamInstanceProfile:                profile,
	}
	if spec.Placement.Zone != "" {
		in.Placement = &types.Placement{AvailabilityZone: awssdk.String(spec.Placement.Zone)}
	}
	if root != nil {
		in.BlockDeviceMappings = []types.BlockDeviceMapping{*root}
	}
	if bestNetwork {
		// An EFA interface carries the security groups itself, and a
		// public address so that sortie reaches the node as any other.
		in.NetworkInterfaces = []types.InstanceNetworkInterfaceSpecification{{
			DeviceIndex:              awssdk.Int32(0),
			InterfaceType:            awssdk.String("efa"),
			Groups:                   in.SecurityGroupIds,
			AssociatePublicIpAddress: awssdk.Bool(true),
			DeleteOnTermination:      awssdk.Bool(true),
		}}
		in.SecurityGroupIds = nil
	}
	if r.UseSpot {
		in.InstanceMarketOptions = &types.InstanceMarketOptionsRequest{
			MarketType: types.MarketTypeSpot,
			SpotOptions: &types.SpotMarketOptions{
				SpotInstanceType:             types.SpotInstanceTypeOneTime,
				InstanceInterruptionBehavior: types.InstanceInterruptionBehaviorTerminate,
			},
		}
	}
	return in, nil
}

// clientToken is RunInstances' idempotency token: the same cluster at the
// same placement and generation always sends the same one (at most 64
// ASCII characters).
func clientToken(spec provision.ClusterSpec, generation int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%s|%d|%d", spec.Name, spec.Placement.Region, spec.Placement.Zone, spec.NumNodes, generation)))
	return "sortie-" + hex.EncodeToString(sum[:20])
}

// waitReady polls the instances until all run, then until each answers SSH
// (pinning its host key), and returns the cluster. An instance that ends on
// the way fails the launch: spot reclaimed at once is a capacity problem.
func (p *Provider) waitReady(ctx context.Context, region string, spec provision.ClusterSpec, ids []string) (*provision.Cluster, error) {
	wait := vm.NewDeadline(p.cfg.Now, p.cfg.PollInterval, p.cfg.LaunchTimeout)
	for {
		c, err := p.clusterOf(ctx, region, spec.Name, ids)
		if err != nil {
			return nil, err
		}
		ready, err := allRunning(c, spec.NumNodes)
		if err != nil {
			return nil, err
		}
		if ready {
			if err := vm.AwaitSSH(ctx, c, p.Runner, wait); err != nil {
				return nil, err
			}
			return c, nil
		}
		provision.Progress(ctx, fmt.Sprintf("waiting for the instances of %s to run (%d of %d running)", spec.Name, running(c), spec.NumNodes))
		if err := wait.Pause(ctx, "instances of "+spec.Name+" to run"); err != nil {
			return nil, err
		}
	}
}

// clusterOf describes the given instances of a cluster. Right after
// RunInstances, EC2 may not know them yet; that is "not ready", not an error.
func (p *Provider) clusterOf(ctx context.Context, region, name string, ids []string) (*provision.Cluster, error) {
	out, err := p.client(region).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if apiCode(err) == "InvalidInstanceID.NotFound" {
		return &provision.Cluster{Name: name}, nil
	}
	if err != nil {
		return nil, classify(fmt.Errorf("describe %s: %w", name, err))
	}
	var instances []types.Instance
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			p.cache.remember(in)
			instances = append(instances, in)
		}
	}
	c := clustersFrom(region, instances)[name]
	if c == nil {
		c = &provision.Cluster{Name: name}
	}
	return c, nil
}

func running(c *provision.Cluster) int {
	n := 0
	for _, node := range c.Nodes {
		if node.State == provision.NodeRunning {
			n++
		}
	}
	return n
}

func allRunning(c *provision.Cluster, want int) (bool, error) {
	if len(c.Nodes) < want {
		return false, nil
	}
	for _, n := range c.Nodes {
		switch n.State {
		case provision.NodeRunning:
		case provision.NodePending:
			return false, nil
		default:
			if r := reasonOf(n.Reason); r.capacity {
				return false, provision.Capacity(fmt.Errorf("node %d (%s) was taken back while starting: %s (%s)", n.Rank, n.InstanceID, n.Reason, r.why))
			}
			return false, fmt.Errorf("node %d (%s) is %s while starting: %s", n.Rank, n.InstanceID, n.State, n.Reason)
		}
	}
	return true, nil
}
