package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
	"sortie/schema"
)

// The StateReason codes EC2 documents (API_StateReason) that sortie tells
// apart by name.
const (
	ReasonSpotTermination      = "Server.SpotInstanceTermination"
	ReasonSpotShutdown         = "Server.SpotInstanceShutdown"
	ReasonScheduledStop        = "Server.ScheduledStop"
	ReasonInsufficientCapacity = "Server.InsufficientInstanceCapacity"
	ReasonServerInternalError  = "Server.InternalError"
	ReasonUserShutdown         = "Client.UserInitiatedShutdown"
	ReasonUserHibernate        = "Client.UserInitiatedHibernate"
	ReasonInstanceShutdown     = "Client.InstanceInitiatedShutdown"
	ReasonInstanceTerminated   = "Client.InstanceTerminated"
	ReasonClientInternalError  = "Client.InternalError"
	ReasonVolumeLimit          = "Client.VolumeLimitExceeded"
	ReasonSnapshotNotFound     = "Client.InvalidSnapshot.NotFound"
)

// stateReason is what an instance that stops or terminates for one
// StateReason code means to sortie.
type stateReason struct {
	// stopped is the node's state when the instance is stopping or
	// stopped, terminated when it is shutting down or terminated.
	stopped, terminated provision.NodeState
	// capacity makes an instance that ends so while its cluster starts a
	// capacity error: the launch moves on to the next placement. Any
	// other end while starting fails the launch as a plain error.
	capacity bool
	// why says it for a person.
	why string
}

// stateReasons is how sortie reads EC2's StateReason codes: the one place
// that decides whether the cloud took a node away (a spot interruption).
//
//	code                                 stopped    terminated  while starting  meaning
//	Server.SpotInstanceTermination       preempted  preempted   capacity        spot interruption: EC2 took the capacity back
//	Server.SpotInstanceShutdown          preempted  preempted   capacity        spot interruption of an instance that stops when interrupted
//	Server.ScheduledStop                 preempted  preempted   capacity        EC2 stopped it for a scheduled retirement of its host
//	Server.InsufficientInstanceCapacity  gone       gone        capacity        no capacity for the launch: a failed launch, not a preemption
//	Server.InternalError                 gone       gone        capacity        EC2 ended it while it launched: a failed launch, not a preemption
//	Client.UserInitiatedShutdown         stopped    terminated  error           stopped or terminated through the EC2 API (sortie's Terminate, or a person)
//	Client.UserInitiatedHibernate        stopped    gone        error           hibernated through the EC2 API
//	Client.InstanceInitiatedShutdown     stopped    gone        error           shut down from its own operating system
//	Client.InstanceTerminated            stopped    gone        error           terminated or rebooted during AMI creation
//	Client.InternalError                 stopped    gone        error           a client error ended it while it launched
//	Client.VolumeLimitExceeded           stopped    gone        error           the account's EBS volume limit ended it while it launched
//	Client.InvalidSnapshot.NotFound      stopped    gone        error           its snapshot was not found while it launched
//	any other code, or none              stopped    gone        error           not the cloud's known doing
//
// Only the first three are preemptions, which the job's strategy recovers
// from without counting a failure; a stopped node is a lost node, a gone
// one ended without sortie asking, a terminated one because it asked.
var stateReasons = map[string]stateReason{
	ReasonSpotTermination:      {provision.NodePreempted, provision.NodePreempted, true, "spot interruption: EC2 took the capacity back"},
	ReasonSpotShutdown:         {provision.NodePreempted, provision.NodePreempted, true, "spot interruption: EC2 took the capacity back and stopped the instance"},
	ReasonScheduledStop:        {provision.NodePreempted, provision.NodePreempted, true, "EC2 stopped the instance for a scheduled retirement of its host"},
	ReasonInsufficientCapacity: {provision.NodeGone, provision.NodeGone, true, "EC2 had no capacity for the launch"},
	ReasonServerInternalError:  {provision.NodeGone, provision.NodeGone, true, "an internal error of EC2 ended the instance while it launched"},
	ReasonUserShutdown:         {provision.NodeStopped, provision.NodeTerminated, false, "stopped or terminated through the EC2 API"},
	ReasonUserHibernate:        {provision.NodeStopped, provision.NodeGone, false, "hibernated through the EC2 API"},
	ReasonInstanceShutdown:     {provision.NodeStopped, provision.NodeGone, false, "shut down from its own operating system"},
	ReasonInstanceTerminated:   {provision.NodeStopped, provision.NodeGone, false, "terminated or rebooted during AMI creation"},
	ReasonClientInternalError:  {provision.NodeStopped, provision.NodeGone, false, "a client error ended the instance while it launched"},
	ReasonVolumeLimit:          {provision.NodeStopped, provision.NodeGone, false, "the account's EBS volume limit ended the instance while it launched"},
	ReasonSnapshotNotFound:     {provision.NodeStopped, provision.NodeGone, false, "a snapshot of the instance's was not found while it launched"},
}

// reasonOf is what code means (stateReasons), an unknown code or none
// being stopped or gone and nobody's known doing.
func reasonOf(code string) stateReason {
	if r, ok := stateReasons[code]; ok {
		return r
	}
	return stateReason{stopped: provision.NodeStopped, terminated: provision.NodeGone}
}

// nodeState maps an instance's state and StateReason code to sortie's
// view, as stateReasons says.
func nodeState(state types.InstanceStateName, reasonCode string) provision.NodeState {
	switch state {
	case types.InstanceStateNamePending:
		return provision.NodePending
	case types.InstanceStateNameRunning:
		return provision.NodeRunning
	case types.InstanceStateNameShuttingDown, types.InstanceStateNameTerminated:
		return reasonOf(reasonCode).terminated
	case types.InstanceStateNameStopping, types.InstanceStateNameStopped:
		return reasonOf(reasonCode).stopped
	}
	return provision.NodeGone
}

// live reports whether an instance still exists in a form that costs money
// or could come back.
func live(in types.Instance) bool {
	if in.State == nil {
		return false
	}
	return in.State.Name != types.InstanceStateNameTerminated && in.State.Name != types.InstanceStateNameShuttingDown
}

func tagMap(tags []types.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[awssdk.ToString(t.Key)] = awssdk.ToString(t.Value)
	}
	return m
}

// rankOf is the node rank sortie tagged, else the launch index (the tag is
// added right after RunInstances; a crash in between leaves only the index).
func rankOf(in types.Instance) int {
	if v, ok := tagMap(in.Tags)[provision.TagRank]; ok {
		if r, err := strconv.Atoi(v); err == nil {
			return r
		}
	}
	return int(awssdk.ToInt32(in.AmiLaunchIndex))
}

// clustersFrom groups a region's sortie instances into clusters. When a
// rank has several instances (a cluster name relaunched after a failed
// launch was cleaned up), the newest one stands for it.
func clustersFrom(region string, instances []types.Instance) map[string]*provision.Cluster {
	byName := map[string]map[int]types.Instance{}
	for _, in := range instances {
		name := tagMap(in.Tags)[provision.TagCluster]
		if name == "" {
			continue
		}
		if byName[name] == nil {
			byName[name] = map[int]types.Instance{}
		}
		rank := rankOf(in)
		old, seen := byName[name][rank]
		if !seen || newer(in, old) {
			byName[name][rank] = in
		}
	}
	out := map[string]*provision.Cluster{}
	for name, ranks := range byName {
		keys := slices.Sorted(maps.Keys(ranks))
		c := &provision.Cluster{Name: name, Tags: map[string]string{}}
		for i, r := range keys {
			in := ranks[r]
			if i == 0 {
				c.Placement = schema.Placement{Cloud: CloudName, Region: region}
				if in.Placement != nil {
					c.Placement.Zone = awssdk.ToString(in.Placement.AvailabilityZone)
				}
				for k, v := range tagMap(in.Tags) {
					if k != "Name" && k != provision.TagRank {
						c.Tags[k] = v
					}
				}
			}
			c.Nodes = append(c.Nodes, nodeOf(r, in))
		}
		out[name] = c
	}
	return out
}

func newer(a, b types.Instance) bool {
	ta, tb := awssdk.ToTime(a.LaunchTime), awssdk.ToTime(b.LaunchTime)
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return live(a) && !live(b)
}

func nodeOf(rank int, in types.Instance) provision.Node {
	n := provision.Node{Rank: rank, InstanceID: awssdk.ToString(in.InstanceId)}
	// Peers reach each other inside the VPC.
	n.IP = awssdk.ToString(in.PrivateIpAddress)
	if n.IP == "" {
		n.IP = awssdk.ToString(in.PublicIpAddress)
	}
	var state types.InstanceStateName
	if in.State != nil {
		state = in.State.Name
	}
	code := ""
	if in.StateReason != nil {
		code = awssdk.ToString(in.StateReason.Code)
	}
	n.State = nodeState(state, code)
	n.Reason = code
	if n.Reason == "" && n.State != provision.NodeRunning && n.State != provision.NodePending {
		n.Reason = awssdk.ToString(in.StateTransitionReason)
	}
	return n
}

// describe lists a region's instances matching filters, every page.
func (p *Provider) describe(ctx context.Context, region string, filters ...types.Filter) ([]types.Instance, error) {
	var out []types.Instance
	pages := ec2.NewDescribeInstancesPaginator(p.client(region), &ec2.DescribeInstancesInput{
		Filters:    filters,
		MaxResults: awssdk.Int32(1000),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, classify(fmt.Errorf("describe sortie's instances in %s: %w", region, err))
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				p.cache.remember(in)
				out = append(out, in)
			}
		}
	}
	return out, nil
}

func tagFilter(key string, values ...string) types.Filter {
	return types.Filter{Name: awssdk.String("tag:" + key), Values: values}
}

// eachRegion runs fn for every configured region at once and merges the
// clusters they find; the first error wins.
func (p *Provider) eachRegion(ctx context.Context, fn func(ctx context.Context, region string) (map[string]*provision.Cluster, error)) (map[string]*provision.Cluster, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		all      = map[string]*provision.Cluster{}
	)
	for _, region := range p.cfg.Regions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found, err := fn(ctx, region)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			for name, c := range found {
				// A name in two regions: prefer the one with a live node.
				if old, ok := all[name]; !ok || (!anyLive(old) && anyLive(c)) {
					all[name] = c
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return all, nil
}

func anyLive(c *provision.Cluster) bool {
	for _, n := range c.Nodes {
		switch n.State {
		case provision.NodePending, provision.NodeRunning, provision.NodeStopped:
			return true
		}
	}
	return false
}

// Status implements provision.Provider with one paginated DescribeInstances
// per region for all of sortie's instances there, whatever the number of
// clusters asked about. With StatusMaxAge set, one such call answers every
// Status of its region until it is that old (the controller's ticks each
// ask for a shard of the jobs: together they cost one call per region per
// poll interval); callers that ask while it is in flight wait for it.
func (p *Provider) Status(ctx context.Context, names []string) (map[string]*provision.Cluster, error) {
	out := map[string]*provision.Cluster{}
	if len(names) == 0 {
		return out, nil
	}
	all, err := p.eachRegion(ctx, p.regionClusters)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if c, ok := all[name]; ok {
			out[name] = cloneCluster(c)
		}
	}
	return out, nil
}

// regionClusters is every cluster of sortie's in region: the shared answer
// while it is younger than StatusMaxAge, else a new DescribeInstances.
func (p *Provider) regionClusters(ctx context.Context, region string) (map[string]*provision.Cluster, error) {
	return p.status.Get(ctx, region, func(ctx context.Context) (map[string]*provision.Cluster, error) {
		return p.describeClusters(ctx, region)
	})
}

func (p *Provider) describeClusters(ctx context.Context, region string) (map[string]*provision.Cluster, error) {
	instances, err := p.describe(ctx, region, tagFilter(provision.TagManaged, "true"))
	if err != nil {
		return nil, err
	}
	return clustersFrom(region, instances), nil
}

// cloneCluster copies c, so that callers sharing an answer never share
// what they change.
func cloneCluster(c *provision.Cluster) *provision.Cluster {
	out := *c
	out.Nodes = slices.Clone(c.Nodes)
	out.Tags = maps.Clone(c.Tags)
	return &out
}

// List implements provision.Provider: every cluster sortie tagged that still
// has an instance not terminated. On the way it deletes the ports security
// groups of clusters that have none (left by a crash).
func (p *Provider) List(ctx context.Context) ([]*provision.Cluster, error) {
	all, err := p.eachRegion(ctx, func(ctx context.Context, region string) (map[string]*provision.Cluster, error) {
		instances, err := p.describe(ctx, region, tagFilter(provision.TagManaged, "true"))
		if err != nil {
			return nil, err
		}
		var keep []types.Instance
		names := map[string]bool{}
		for _, in := range instances {
			if live(in) {
				names[tagMap(in.Tags)[provision.TagCluster]] = true
			}
		}
		for _, in := range instances {
			if names[tagMap(in.Tags)[provision.TagCluster]] {
				keep = append(keep, in)
			}
		}
		p.sweepPortsGroups(ctx, region, names)
		return clustersFrom(region, keep), nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*provision.Cluster, 0, len(all))
	for _, c := range all {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Terminate implements provision.Provider: every instance tagged with the
// cluster's name, in every configured region, is terminated, then the
// cluster's ports security group, once no instance uses it.
func (p *Provider) Terminate(ctx context.Context, name string) error {
	// The nodes are going: their SSH connections with them.
	p.ssh.Forget(name)
	_, err := p.eachRegion(ctx, func(ctx context.Context, region string) (map[string]*provision.Cluster, error) {
		defer p.status.Forget(region)
		instances, err := p.describe(ctx, region, tagFilter(provision.TagManaged, "true"), tagFilter(provision.TagCluster, name))
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, in := range instances {
			if live(in) {
				ids = append(ids, awssdk.ToString(in.InstanceId))
			}
		}
		if err := p.terminateIDs(ctx, region, name, ids); err != nil {
			return nil, err
		}
		return nil, p.dropPortsGroups(ctx, region, name)
	})
	return err
}

func (p *Provider) terminateIDs(ctx context.Context, region, name string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := p.client(region).TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	if err != nil && apiCode(err) != "InvalidInstanceID.NotFound" {
		return classify(fmt.Errorf("terminate %s (%s) in %s: %w", name, strings.Join(ids, ", "), region, err))
	}
	p.logger(ctx).Info("terminated instances", "cluster", name, "region", region, "instances", ids)
	return nil
}
