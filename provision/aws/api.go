package aws

import (
	"context"
	"sync"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// ec2API is the part of EC2 sortie uses; *ec2.Client implements it.
type ec2API interface {
	RunInstances(context.Context, *ec2.RunInstancesInput, ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error)
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
	CreateTags(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeAvailabilityZones(context.Context, *ec2.DescribeAvailabilityZonesInput, ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
	DescribeImages(context.Context, *ec2.DescribeImagesInput, ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeKeyPairs(context.Context, *ec2.DescribeKeyPairsInput, ...func(*ec2.Options)) (*ec2.DescribeKeyPairsOutput, error)
	ImportKeyPair(context.Context, *ec2.ImportKeyPairInput, ...func(*ec2.Options)) (*ec2.ImportKeyPairOutput, error)
	DescribeVpcs(context.Context, *ec2.DescribeVpcsInput, ...func(*ec2.Options)) (*ec2.DescribeVpcsOutput, error)
	DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	CreateSecurityGroup(context.Context, *ec2.CreateSecurityGroupInput, ...func(*ec2.Options)) (*ec2.CreateSecurityGroupOutput, error)
	DeleteSecurityGroup(context.Context, *ec2.DeleteSecurityGroupInput, ...func(*ec2.Options)) (*ec2.DeleteSecurityGroupOutput, error)
	AuthorizeSecurityGroupIngress(context.Context, *ec2.AuthorizeSecurityGroupIngressInput, ...func(*ec2.Options)) (*ec2.AuthorizeSecurityGroupIngressOutput, error)
	DescribeRegions(context.Context, *ec2.DescribeRegionsInput, ...func(*ec2.Options)) (*ec2.DescribeRegionsOutput, error)
}

// cache holds what rarely changes in an account (instance types, zones,
// images, the key pair and security group once ensured) and the addresses
// of instances seen, so that each costs one call per provider lifetime.
type cache struct {
	mu        sync.Mutex
	types     map[string][]types.InstanceTypeInfo // region -> every type; region/name -> that one
	offerings map[string][]string                 // region/type -> zones
	zones     map[string][]string                 // region -> available zones
	images    map[string]types.Image              // region/image id or region/arch -> image
	tags      map[string]resolvedTag              // region/tag/arch -> the image a SkyPilot tag resolved to
	keyPairs  map[string]bool                     // region -> ensured
	groups    map[string]string                   // region -> security group id
	vpcs      map[string]string                   // region -> default VPC id
	addrs     map[string]string                   // instance id -> SSH address
}

func newCache() cache {
	return cache{
		types: map[string][]types.InstanceTypeInfo{}, offerings: map[string][]string{},
		zones: map[string][]string{}, images: map[string]types.Image{}, tags: map[string]resolvedTag{},
		keyPairs: map[string]bool{}, groups: map[string]string{}, vpcs: map[string]string{}, addrs: map[string]string{},
	}
}

// remember records the address SSH should use for an instance: the public
// IP when it has one, else the private one (reached through a proxy).
func (c *cache) remember(in types.Instance) {
	addr := awssdk.ToString(in.PublicIpAddress)
	if addr == "" {
		addr = awssdk.ToString(in.PrivateIpAddress)
	}
	if addr == "" || in.InstanceId == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addrs[*in.InstanceId] = addr
}

func (c *cache) address(instanceID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.addrs[instanceID]
	return a, ok
}

// lookup returns m[key] under the cache's lock.
func lookup[V any](c *cache, m map[string]V, key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := m[key]
	return v, ok
}

// store sets m[key] under the cache's lock.
func store[V any](c *cache, m map[string]V, key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m[key] = v
}
