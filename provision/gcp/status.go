package gcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"

	"sortie/provision"
	"sortie/schema"
)

// managedFilter selects every VM sortie launched in the project.
var managedFilter = fmt.Sprintf(`labels.%s = "true"`, provision.TagManaged)

// evidenceFilter selects the operations that say why a VM stopped or went:
// Compute Engine's preemptions, and every deletion and stop.
const evidenceFilter = `(operationType = "compute.instances.preempted") OR (operationType = "delete") OR (operationType = "stop")`

// Status implements provision.Provider with one aggregated instance list
// for all the names, plus one aggregated operation list when a VM is
// stopped or missing and the reason must be found. Both lists answer every
// Status call for StatusMaxAge.
func (p *Provider) Status(ctx context.Context, names []string) (map[string]*provision.Cluster, error) {
	out := map[string]*provision.Cluster{}
	if len(names) == 0 {
		return out, nil
	}
	all, err := p.vms.Get(ctx, "", p.managedInstances)
	if err != nil {
		return nil, err
	}
	return p.clusters(ctx, all, names, func(ctx context.Context) (*evidence, error) {
		return p.ops.Get(ctx, "", p.loadEvidence)
	})
}

// managedInstances lists every VM sortie launched in the project.
func (p *Provider) managedInstances(ctx context.Context) ([]*computepb.Instance, error) {
	all, err := p.api.Instances(ctx, p.cfg.Project, managedFilter)
	if err != nil {
		return nil, classify(fmt.Errorf("list sortie's VMs in project %s: %w", p.cfg.Project, err))
	}
	return all, nil
}

// forgetStatus drops Status's shared lists: sortie changed the project's
// VMs, and the next Status lists afresh.
func (p *Provider) forgetStatus() {
	p.vms.Forget("")
	p.ops.Forget("")
}

// List implements provision.Provider: every cluster with a VM labelled by
// sortie, from one aggregated list. Ranks whose VM is missing are shown
// gone; Status tells why. On the way it deletes the firewall rules of
// clusters that have no VM (left by a crash).
func (p *Provider) List(ctx context.Context) ([]*provision.Cluster, error) {
	all, err := p.managedInstances(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, in := range all {
		if n := in.GetLabels()[provision.TagCluster]; n != "" {
			names[n] = true
		}
	}
	m, err := p.clusters(ctx, all, slices.Sorted(maps.Keys(names)), nil)
	if err != nil {
		return nil, err
	}
	p.sweepFirewalls(ctx, names)
	out := make([]*provision.Cluster, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[name])
	}
	return out, nil
}

// clusterInstances lists the VMs of one cluster.
func (p *Provider) clusterInstances(ctx context.Context, name string) ([]*computepb.Instance, error) {
	filter := fmt.Sprintf(`labels.%s = "%s"`, provision.TagCluster, labelValue(name))
	all, err := p.api.Instances(ctx, p.cfg.Project, filter)
	if err != nil {
		return nil, classify(fmt.Errorf("list VMs of %s: %w", name, err))
	}
	return all, nil
}

// describe is one cluster's current state; a cluster with no VM and no
// trace in the operations is an error.
func (p *Provider) describe(ctx context.Context, name string) (*provision.Cluster, error) {
	all, err := p.clusterInstances(ctx, name)
	if err != nil {
		return nil, err
	}
	m, err := p.clusters(ctx, all, []string{name}, p.loadEvidence)
	if err != nil {
		return nil, err
	}
	if c, ok := m[name]; ok {
		return c, nil
	}
	return nil, provision.Capacity(fmt.Errorf("%w: cluster %s has no VM", errLostWhileBooting, name))
}

// clusters builds the named clusters from the listed VMs. With ops set,
// ranks that are stopped or missing are explained from the operations it
// returns.
func (p *Provider) clusters(ctx context.Context, all []*computepb.Instance, names []string, ops func(context.Context) (*evidence, error)) (map[string]*provision.Cluster, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	groups := map[string][]*computepb.Instance{}
	for _, in := range all {
		name := in.GetLabels()[provision.TagCluster]
		if want[name] && rankOf(in) >= 0 {
			groups[name] = append(groups[name], in)
			p.remember(in)
		}
	}
	var ev *evidence
	if ops != nil && p.needsEvidence(names, groups) {
		var err error
		if ev, err = ops(ctx); err != nil {
			return nil, err
		}
	}
	out := map[string]*provision.Cluster{}
	for _, name := range names {
		if c := p.cluster(name, groups[name], ev); c != nil {
			out[name] = c
		}
	}
	return out, nil
}

// needsEvidence reports whether some cluster has a VM that is not plainly
// up or booting, a missing rank, or no VM at all.
func (p *Provider) needsEvidence(names []string, groups map[string][]*computepb.Instance) bool {
	for _, name := range names {
		g := groups[name]
		if len(g) == 0 || len(g) < numNodes(g) {
			return true
		}
		for _, in := range g {
			switch in.GetStatus() {
			case "PROVISIONING", "STAGING", "RUNNING", "REPAIRING":
			default:
				if !p.asked(in.GetId()) {
					return true
				}
			}
		}
	}
	return false
}

// numNodes is the cluster size the VMs' labels record.
func numNodes(g []*computepb.Instance) int {
	n := 0
	for _, in := range g {
		if v, err := strconv.Atoi(in.GetLabels()[labelNumNodes]); err == nil {
			n = max(n, v)
		}
		n = max(n, rankOf(in)+1)
	}
	return n
}

// asked reports whether this provider asked to delete the VM.
func (p *Provider) asked(id uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deleting[strconv.FormatUint(id, 10)]
}

// cluster builds one cluster, or nil when it has left no trace.
func (p *Provider) cluster(name string, g []*computepb.Instance, ev *evidence) *provision.Cluster {
	byRank := map[int]*computepb.Instance{}
	for _, in := range g {
		if prev, ok := byRank[rankOf(in)]; !ok || p.preferred(in, prev) {
			byRank[rankOf(in)] = in
		}
	}
	size := numNodes(g)
	var traces map[int]trace
	if ev != nil {
		traces = ev.ofCluster(name)
		for r := range traces {
			size = max(size, r+1)
		}
	}
	if size == 0 {
		return nil
	}
	c := &provision.Cluster{Name: name, Tags: map[string]string{provision.TagManaged: "true", provision.TagCluster: name}}
	// The zone of the VMs that are there, else of the last trace of one.
	zone, traceZone := "", ""
	for r := range size {
		in, ok := byRank[r]
		if !ok {
			t := traces[r]
			if traceZone == "" {
				traceZone = t.zone
			}
			c.Nodes = append(c.Nodes, p.missingNode(r, t))
			continue
		}
		if zone == "" {
			zone = lastSegment(in.GetZone())
			for k, v := range in.GetLabels() {
				if k != provision.TagRank && k != labelNumNodes {
					c.Tags[k] = v
				}
			}
		}
		c.Nodes = append(c.Nodes, p.presentNode(r, in, ev))
	}
	if zone == "" {
		zone = traceZone
	}
	c.Placement = schema.Placement{Cloud: CloudName, Region: regionOf(zone), Zone: zone}
	return c
}

// preferred reports whether a should stand for its rank rather than b, when
// a cluster has two VMs of one rank: a launch moved to another zone while
// the first zone's VMs were still being deleted.
func (p *Provider) preferred(a, b *computepb.Instance) bool {
	if p.leaving(a) != p.leaving(b) {
		return !p.leaving(a)
	}
	return a.GetCreationTimestamp() > b.GetCreationTimestamp()
}

// leaving reports whether a VM is on its way out at sortie's request.
func (p *Provider) leaving(in *computepb.Instance) bool {
	return p.asked(in.GetId()) || in.GetStatus() == "STOPPING" && !isSpot(in)
}

func (p *Provider) presentNode(rank int, in *computepb.Instance, ev *evidence) provision.Node {
	n := provision.Node{Rank: rank, InstanceID: strconv.FormatUint(in.GetId(), 10), IP: internalIP(in)}
	status := in.GetStatus()
	var t trace
	if ev != nil {
		t = ev.byID[in.GetId()]
	}
	switch {
	case p.asked(in.GetId()) || t.kind == traceOurDelete:
		n.State, n.Reason = provision.NodeTerminated, "deleted at sortie's request"
	case status == "RUNNING":
		n.State = provision.NodeRunning
	case status == "PROVISIONING" || status == "STAGING" || status == "REPAIRING":
		n.State, n.Reason = provision.NodePending, status
	case t.kind == tracePreempted:
		n.State, n.Reason = provision.NodePreempted, "compute.instances.preempted at "+t.at
	case t.kind == traceStop:
		n.State, n.Reason = provision.NodeStopped, fmt.Sprintf("status %s: stopped by %s at %s", status, t.user, t.at)
	case isSpot(in) && (status == "TERMINATED" || status == "STOPPING"):
		n.State, n.Reason = provision.NodePreempted, fmt.Sprintf("spot VM %s (last stop %s)", status, in.GetLastStopTimestamp())
	case t.kind == traceOtherDelete:
		n.State, n.Reason = provision.NodeGone, "being deleted by "+t.user
	default:
		n.State, n.Reason = provision.NodeStopped, "status "+status
		if m := in.GetStatusMessage(); m != "" {
			n.Reason += ": " + m
		}
	}
	return n
}

func (p *Provider) missingNode(rank int, t trace) provision.Node {
	n := provision.Node{Rank: rank, State: provision.NodeGone, Reason: "VM not found"}
	if t.id != 0 {
		n.InstanceID = strconv.FormatUint(t.id, 10)
	}
	switch t.kind {
	case tracePreempted:
		n.State, n.Reason = provision.NodePreempted, "compute.instances.preempted at "+t.at
	case traceOurDelete:
		n.State, n.Reason = provision.NodeTerminated, "deleted at sortie's request"
	case traceOtherDelete:
		n.Reason = "deleted by " + t.user
	}
	if n.InstanceID != "" && p.asked(t.id) {
		n.State, n.Reason = provision.NodeTerminated, "deleted at sortie's request"
	}
	return n
}

func isSpot(in *computepb.Instance) bool {
	s := in.GetScheduling()
	return s.GetProvisioningModel() == "SPOT" || s.GetPreemptible()
}

// Terminate implements provision.Provider: it deletes every VM of the
// cluster and returns without waiting for the deletions to finish; Status
// shows the VMs terminated from then on.
func (p *Provider) Terminate(ctx context.Context, name string) error {
	// The nodes are going: their SSH connections with them.
	p.ssh.Forget(name)
	return p.terminate(ctx, name)
}

func (p *Provider) terminate(ctx context.Context, name string) error {
	defer p.forgetStatus()
	all, err := p.clusterInstances(ctx, name)
	if err != nil {
		return fmt.Errorf("terminate %s: %w", name, err)
	}
	var errs []error
	for _, in := range all {
		zone := lastSegment(in.GetZone())
		p.mu.Lock()
		p.deleting[strconv.FormatUint(in.GetId(), 10)] = true
		p.mu.Unlock()
		_, err := p.api.DeleteInstance(ctx, p.cfg.Project, zone, in.GetName(), deleteRequestID(p.cfg.Project, zone, in.GetId()))
		if err != nil && !isNotFound(err) {
			errs = append(errs, classify(fmt.Errorf("delete %s in %s: %w", in.GetName(), zone, err)))
			continue
		}
		p.logger(ctx).Info("deleting VM", "cluster", name, "instance", in.GetName(), "zone", zone, "id", in.GetId())
	}
	if err := p.dropFirewall(ctx, p.logger(ctx), name); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("terminate %s: %w", name, errors.Join(errs...))
	}
	return nil
}

// trace is what the operations say became of one VM.
type trace struct {
	kind traceKind
	id   uint64
	zone string
	at   string
	user string
}

type traceKind int

const (
	traceNone traceKind = iota
	tracePreempted
	traceOurDelete
	traceOtherDelete
	traceStop
)

// evidence indexes the preemption and deletion operations of the project.
type evidence struct {
	byID      map[uint64]trace
	byCluster map[string]map[int]trace // cluster -> rank -> latest trace of its VM
}

var rankSuffix = regexp.MustCompile(`^(.+)-(\d+)$`)

func (p *Provider) loadEvidence(ctx context.Context) (*evidence, error) {
	ops, err := p.api.Operations(ctx, p.cfg.Project, evidenceFilter)
	if err != nil {
		return nil, classify(fmt.Errorf("list preemptions and deletions in project %s: %w", p.cfg.Project, err))
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].GetInsertTime() < ops[j].GetInsertTime() })
	ev := &evidence{byID: map[uint64]trace{}, byCluster: map[string]map[int]trace{}}
	for _, op := range ops {
		if op.GetZone() == "" {
			continue // a global operation (on a firewall rule): never a VM's
		}
		zone := lastSegment(op.GetZone())
		t := trace{id: op.GetTargetId(), zone: zone, at: op.GetInsertTime(), user: op.GetUser()}
		switch {
		case op.GetOperationType() == "compute.instances.preempted":
			t.kind = tracePreempted
		case op.GetClientOperationId() != "" && op.GetClientOperationId() == deleteRequestID(p.cfg.Project, zone, op.GetTargetId()):
			t.kind = traceOurDelete
		case op.GetOperationType() == "delete":
			t.kind = traceOtherDelete
		case op.GetOperationType() == "stop":
			t.kind = traceStop
		default:
			continue
		}
		// Later operations win: a preempted VM that sortie then deleted
		// is terminated, as sortie asked.
		ev.byID[t.id] = t
		if m := rankSuffix.FindStringSubmatch(lastSegment(op.GetTargetLink())); m != nil {
			if r, err := strconv.Atoi(m[2]); err == nil {
				if ev.byCluster[m[1]] == nil {
					ev.byCluster[m[1]] = map[int]trace{}
				}
				ev.byCluster[m[1]][r] = t
			}
		}
	}
	return ev, nil
}

// ofCluster maps rank -> trace for the VMs named after cluster.
func (ev *evidence) ofCluster(cluster string) map[int]trace { return ev.byCluster[cluster] }
