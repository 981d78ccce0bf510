package aws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
	"sortie/provision/vm"
)

// portsGroupName is the security group that opens one cluster's
// resources.ports. It is the cluster's own, tagged with its name, so that
// Terminate deletes it with the instances and List finds it when a crash
// left it behind.
func portsGroupName(cluster string) string { return cluster + "-ports" }

// ensurePortsGroup returns the id of the cluster's ports group in region,
// creating it and opening each range to TCP from anywhere, as a task that
// serves on those ports needs.
func (p *Provider) ensurePortsGroup(ctx context.Context, region, cluster string, ports []provision.PortRange) (string, error) {
	return p.ensureGroup(ctx, region, groupSpec{
		name:        portsGroupName(cluster),
		description: "sortie: the ports cluster " + cluster + " asked for",
		tags: []types.Tag{
			{Key: awssdk.String(provision.TagManaged), Value: awssdk.String("true")},
			{Key: awssdk.String(provision.TagCluster), Value: awssdk.String(cluster)},
		},
		opening: "open ports",
		missing: func(perms []types.IpPermission) []types.IpPermission {
			var missing []types.IpPermission
			for _, r := range ports {
				if opens(perms, r) {
					continue
				}
				missing = append(missing, types.IpPermission{
					IpProtocol: awssdk.String("tcp"),
					FromPort:   awssdk.Int32(int32(r.From)),
					ToPort:     awssdk.Int32(int32(r.To)),
					IpRanges:   []types.IpRange{{CidrIp: awssdk.String("0.0.0.0/0"), Description: awssdk.String("resources.ports " + r.String())}},
				})
			}
			return missing
		},
	})
}

// opens reports whether perms already let TCP from anywhere in on r.
func opens(perms []types.IpPermission, r provision.PortRange) bool {
	for _, perm := range perms {
		if awssdk.ToString(perm.IpProtocol) != "tcp" || awssdk.ToInt32(perm.FromPort) != int32(r.From) || awssdk.ToInt32(perm.ToPort) != int32(r.To) {
			continue
		}
		for _, ip := range perm.IpRanges {
			if awssdk.ToString(ip.CidrIp) == "0.0.0.0/0" {
				return true
			}
		}
	}
	return false
}

// portsGroups lists the ports groups sortie made in region: of one
// cluster, or of all when cluster is "".
func (p *Provider) portsGroups(ctx context.Context, region, cluster string) ([]types.SecurityGroup, error) {
	filters := []types.Filter{tagFilter(provision.TagManaged, "true")}
	if cluster != "" {
		filters = append(filters, tagFilter(provision.TagCluster, cluster))
	} else {
		filters = append(filters, types.Filter{Name: awssdk.String("tag-key"), Values: []string{provision.TagCluster}})
	}
	out, err := p.client(region).DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: filters})
	if err != nil {
		return nil, classify(fmt.Errorf("list sortie's ports security groups in %s: %w", region, err))
	}
	return out.SecurityGroups, nil
}

// errGroupInUse is a ports group that instances still use.
var errGroupInUse = errors.New("still used by instances")

// deletePortsGroup deletes one ports group, telling log; an instance that
// still uses it (shutting down) is errGroupInUse.
func (p *Provider) deletePortsGroup(ctx context.Context, log *slog.Logger, region string, g types.SecurityGroup) error {
	id := awssdk.ToString(g.GroupId)
	_, err := p.client(region).DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: g.GroupId})
	switch apiCode(err) {
	case "":
		if err != nil {
			return classify(fmt.Errorf("delete security group %s in %s: %w", id, region, err))
		}
		log.Info("deleted security group", "name", awssdk.ToString(g.GroupName), "region", region, "id", id)
		return nil
	case "InvalidGroup.NotFound":
		return nil
	case "DependencyViolation":
		return fmt.Errorf("delete security group %s (%s) in %s: %w", awssdk.ToString(g.GroupName), id, region, errGroupInUse)
	}
	return classify(fmt.Errorf("delete security group %s in %s: %w", id, region, err))
}

// dropPortsGroups deletes the cluster's ports groups in region once its
// instances there have terminated: EC2 refuses to delete a group that a
// shutting-down instance still uses.
func (p *Provider) dropPortsGroups(ctx context.Context, region, cluster string) error {
	groups, err := p.portsGroups(ctx, region, cluster)
	if err != nil || len(groups) == 0 {
		return err
	}
	wait := vm.NewDeadline(p.cfg.Now, p.cfg.PollInterval, p.cfg.LaunchTimeout)
	for _, g := range groups {
		for {
			err := p.deletePortsGroup(ctx, p.logger(ctx), region, g)
			if !errors.Is(err, errGroupInUse) {
				if err != nil {
					return err
				}
				break
			}
			if err := wait.Pause(ctx, "instances of "+cluster+" to terminate before deleting "+awssdk.ToString(g.GroupName)); err != nil {
				return fmt.Errorf("%w (last: %v)", err, errGroupInUse)
			}
		}
	}
	return nil
}

// sweepPortsGroups deletes the ports groups of region whose cluster has no
// instance left alive there (clusters holds the live ones): a controller
// that died between creating a group and launching, or before its
// teardown finished, leaves one. A launch of that name in this process is
// waited for first; a group still in use is left for a later sweep.
func (p *Provider) sweepPortsGroups(ctx context.Context, region string, live map[string]bool) {
	groups, err := p.portsGroups(ctx, region, "")
	if err != nil {
		p.log.Warn("list ports security groups", "region", region, "err", err)
		return
	}
	for _, g := range groups {
		cluster := tagMap(g.Tags)[provision.TagCluster]
		if cluster == "" || live[cluster] {
			continue
		}
		func() {
			defer p.launches.Lock(cluster)()
			if err := p.deletePortsGroup(ctx, p.log, region, g); err != nil && !errors.Is(err, errGroupInUse) {
				p.log.Warn("delete a left-over ports security group", "region", region, "cluster", cluster, "err", err)
			}
		}()
	}
}
