package aws

import (
	"context"
	"fmt"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
)

// ensureKeyPair imports sortie's public key into the region once. A
// concurrent import by another sortie process is as good as our own.
func (p *Provider) ensureKeyPair(ctx context.Context, region string) error {
	if _, ok := lookup(&p.cache, p.cache.keyPairs, region); ok {
		return nil
	}
	name := p.KeyPairName()
	api := p.client(region)
	_, err := api.DescribeKeyPairs(ctx, &ec2.DescribeKeyPairsInput{KeyNames: []string{name}})
	switch apiCode(err) {
	case "":
		if err != nil {
			return classify(fmt.Errorf("look up key pair %s in %s: %w", name, region, err))
		}
	case "InvalidKeyPair.NotFound":
		_, err = api.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{
			KeyName:           awssdk.String(name),
			PublicKeyMaterial: []byte(p.ssh.AuthorizedKey()),
			TagSpecifications: []types.TagSpecification{{
				ResourceType: types.ResourceTypeKeyPair,
				Tags:         []types.Tag{{Key: awssdk.String(provision.TagManaged), Value: awssdk.String("true")}},
			}},
		})
		if err != nil && apiCode(err) != "InvalidKeyPair.Duplicate" {
			return classify(fmt.Errorf("import key pair %s into %s: %w", name, region, err))
		}
		p.logger(ctx).Info("imported key pair", "name", name, "region", region)
	default:
		return classify(fmt.Errorf("look up key pair %s in %s: %w", name, region, err))
	}
	store(&p.cache, p.cache.keyPairs, region, true)
	return nil
}

// ensureSecurityGroup returns the id of the "sortie" group in the region's
// default VPC, creating it with SSH open when missing.
func (p *Provider) ensureSecurityGroup(ctx context.Context, region string) (string, error) {
	if id, ok := lookup(&p.cache, p.cache.groups, region); ok {
		return id, nil
	}
	id, err := p.ensureGroup(ctx, region, groupSpec{
		name:        SecurityGroupName,
		description: "sortie: SSH to the instances it launches",
		tags:        []types.Tag{{Key: awssdk.String(provision.TagManaged), Value: awssdk.String("true")}},
		opening:     "open SSH",
		missing: func(perms []types.IpPermission) []types.IpPermission {
			if allowsSSH(perms) {
				return nil
			}
			return []types.IpPermission{{
				IpProtocol: awssdk.String("tcp"),
				FromPort:   awssdk.Int32(22),
				ToPort:     awssdk.Int32(22),
				IpRanges:   []types.IpRange{{CidrIp: awssdk.String("0.0.0.0/0"), Description: awssdk.String("SSH from sortie")}},
			}}
		},
	})
	if err != nil {
		return "", err
	}
	store(&p.cache, p.cache.groups, region, id)
	return id, nil
}

// groupSpec is a security group sortie makes in a region's default VPC.
type groupSpec struct {
	name, description string
	tags              []types.Tag
	// missing returns the ingress rules the group must have that perms,
	// its present ones, lack.
	missing func(perms []types.IpPermission) []types.IpPermission
	opening string // what adding them does, for errors: "open SSH"
}

// ensureGroup returns the id of the group named g.name in the region's
// default VPC, creating it when missing (one created at the same moment by
// another sortie process is as good as our own) and adding the ingress
// rules it lacks.
func (p *Provider) ensureGroup(ctx context.Context, region string, g groupSpec) (string, error) {
	vpc, err := p.defaultVPC(ctx, region)
	if err != nil {
		return "", err
	}
	api := p.client(region)
	find := func() (*types.SecurityGroup, error) {
		out, err := api.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
			{Name: awssdk.String("group-name"), Values: []string{g.name}},
			{Name: awssdk.String("vpc-id"), Values: []string{vpc}},
		}})
		if err != nil {
			return nil, classify(fmt.Errorf("look up security group %s in %s: %w", g.name, region, err))
		}
		if len(out.SecurityGroups) == 0 {
			return nil, nil
		}
		return &out.SecurityGroups[0], nil
	}
	group, err := find()
	if err != nil {
		return "", err
	}
	if group == nil {
		created, err := api.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
			GroupName:   awssdk.String(g.name),
			Description: awssdk.String(g.description),
			VpcId:       awssdk.String(vpc),
			TagSpecifications: []types.TagSpecification{{
				ResourceType: types.ResourceTypeSecurityGroup,
				Tags:         g.tags,
			}},
		})
		switch {
		case err == nil:
			group = &types.SecurityGroup{GroupId: created.GroupId}
			p.logger(ctx).Info("created security group", "name", g.name, "region", region, "id", awssdk.ToString(created.GroupId))
		case apiCode(err) == "InvalidGroup.Duplicate":
			if group, err = find(); err != nil || group == nil {
				return "", fmt.Errorf("security group %s in %s: created concurrently but not found: %v", g.name, region, err)
			}
		default:
			return "", classify(fmt.Errorf("create security group %s in %s: %w", g.name, region, err))
		}
	}
	id := awssdk.ToString(group.GroupId)
	if missing := g.missing(group.IpPermissions); len(missing) > 0 {
		_, err := api.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: awssdk.String(id), IpPermissions: missing})
		if err != nil && apiCode(err) != "InvalidPermission.Duplicate" {
			return "", classify(fmt.Errorf("%s in security group %s (%s) in %s: %w", g.opening, g.name, id, region, err))
		}
	}
	return id, nil
}

func allowsSSH(perms []types.IpPermission) bool {
	for _, perm := range perms {
		proto := awssdk.ToString(perm.IpProtocol)
		if proto == "-1" {
			return true
		}
		if proto == "tcp" && awssdk.ToInt32(perm.FromPort) <= 22 && awssdk.ToInt32(perm.ToPort) >= 22 {
			return true
		}
	}
	return false
}

// defaultVPC is the id of the region's default VPC, which sortie launches into.
func (p *Provider) defaultVPC(ctx context.Context, region string) (string, error) {
	if id, ok := lookup(&p.cache, p.cache.vpcs, region); ok {
		return id, nil
	}
	vpcs, err := p.client(region).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{
		Filters: []types.Filter{{Name: awssdk.String("is-default"), Values: []string{"true"}}},
	})
	if err != nil {
		return "", classify(fmt.Errorf("find the default VPC of %s: %w", region, err))
	}
	if len(vpcs.Vpcs) == 0 {
		return "", provision.Prechecks(fmt.Errorf("region %s has no default VPC, which sortie launches into; create one with `aws ec2 create-default-vpc --region %s`", region, region))
	}
	id := awssdk.ToString(vpcs.Vpcs[0].VpcId)
	store(&p.cache, p.cache.vpcs, region, id)
	return id, nil
}
