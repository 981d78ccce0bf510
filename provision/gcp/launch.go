package gcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"sortie/provision"
	"sortie/provision/imagetag"
	"sortie/provision/vm"
)

// maxInsertGenerations bounds how many earlier, failed inserts of one VM in
// one zone Launch steps past (see insert).
const maxInsertGenerations = 32

// Launch implements provision.Provider. The VMs of a cluster that already
// exists (found by label, so also after a restart) are returned as they
// are; ranks missing from it are inserted. Inserts carry deterministic
// request ids, so a retried request never makes a second VM.
func (p *Provider) Launch(ctx context.Context, spec provision.ClusterSpec) (*provision.Cluster, error) {
	if spec.NumNodes < 1 {
		return nil, provision.Prechecks(fmt.Errorf("launch %s: num_nodes %d; it must be at least 1", spec.Name, spec.NumNodes))
	}
	if err := validClusterName(spec.Name, spec.NumNodes); err != nil {
		return nil, err
	}
	if err := checkLabels(spec.Resources.Labels); err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	ports, err := provision.ParsePorts(spec.Resources.Ports)
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	defer p.launches.Lock(spec.Name)()
	defer p.forgetStatus()

	existing, err := p.clusterInstances(ctx, spec.Name)
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	zone := spec.Placement.Zone
	present := map[int]bool{}
	settled := false // some VM is stopped or gone: return what is there
	for _, in := range existing {
		if p.leaving(in) {
			continue // being deleted: a failed launch here, or an old cluster
		}
		zone = lastSegment(in.GetZone())
		present[rankOf(in)] = true
		switch in.GetStatus() {
		case "STOPPING", "TERMINATED", "STOPPED", "SUSPENDING", "SUSPENDED":
			settled = true
		}
	}
	if zone == "" {
		if zone, err = p.firstZone(ctx, spec); err != nil {
			return nil, err
		}
	}
	where := fmt.Sprintf("launch %s in %s", spec.Name, zone)
	if settled && len(present) >= spec.NumNodes {
		return p.describe(ctx, spec.Name)
	}

	_, types, err := p.catalog(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	mt, ok, err := resolveType(types[zone], spec.Resources)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if !ok {
		return nil, provision.Prechecks(fmt.Errorf("%s: zone %s does not offer %s; pick another zone or machine type", where, zone, describeRequest(spec.Resources)))
	}

	if spec.Resources.ImageID, err = p.taggedImage(ctx, spec.Resources.ImageID); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	// What the machine type cannot have is refused before anything is made.
	if _, err := p.instanceFor(spec, zone, mt, 0); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var ops []*computepb.Operation
	var errs []error
	if len(ports) > 0 {
		if err := p.ensureFirewall(ctx, spec.Name, ports); err != nil {
			errs = append(errs, err)
		}
	}
	for rank := range spec.NumNodes {
		if len(errs) > 0 {
			break
		}
		if present[rank] {
			continue
		}
		in, err := p.instanceFor(spec, zone, mt, rank)
		if err != nil {
			errs = append(errs, err)
			break
		}
		op, err := p.insert(ctx, zone, in)
		if err != nil {
			errs = append(errs, err)
			break
		}
		ops = append(ops, op)
	}
	for _, op := range ops {
		if err := p.wait(ctx, zone, op); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		var c *provision.Cluster
		if c, err = p.waitRunning(ctx, spec); err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	err = firstClassified(errs)
	p.logger(ctx).Info("launch failed; deleting what was created", "cluster", spec.Name, "zone", zone, "class", provision.Classify(err), "err", err)
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if terr := p.terminate(cleanup, spec.Name); terr != nil {
		p.logger(ctx).Warn("delete after a failed launch", "cluster", spec.Name, "err", terr)
	}
	return nil, wrapClassified(where, err)
}

// firstZone is the zone to use when a placement names only a region.
func (p *Provider) firstZone(ctx context.Context, spec provision.ClusterSpec) (string, error) {
	r := spec.Resources
	r.Cloud, r.Region, r.Zone = CloudName, spec.Placement.Region, ""
	ps, err := p.Placements(ctx, r)
	if err != nil {
		return "", fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	return ps[0].Zone, nil
}

// firstClassified picks the error that decides what the controller does:
// prechecks first (nothing will help), then capacity, then the first.
func firstClassified(errs []error) error {
	for _, class := range []provision.ErrorClass{provision.ClassPrechecks, provision.ClassCapacity} {
		for _, e := range errs {
			if provision.Classify(e) == class {
				return e
			}
		}
	}
	return errs[0]
}

// wrapClassified adds context to err and keeps its class.
func wrapClassified(where string, err error) error {
	wrapped := fmt.Errorf("%s: %w", where, err)
	switch provision.Classify(err) {
	case provision.ClassCapacity:
		return provision.Capacity(wrapped)
	case provision.ClassPrechecks:
		return provision.Prechecks(wrapped)
	}
	return wrapped
}

// instanceFor is the VM of rank in spec's cluster. Its disk and network
// tiers may ask what the machine type cannot have: a prechecks error.
func (p *Provider) instanceFor(spec provision.ClusterSpec, zone string, mt machineType, rank int) (*computepb.Instance, error) {
	r := spec.Resources
	diskType, iops, err := bootDisk(mt, r.DiskTier)
	if err != nil {
		return nil, err
	}
	tier1, err := bestNetwork(mt, r.NetworkTier)
	if err != nil {
		return nil, err
	}
	image := r.ImageID
	if _, tagged := imagetag.Parse(image); tagged {
		return nil, fmt.Errorf("resources.image_id: %s was not resolved before the launch", image)
	}
	switch {
	case image == "" || strings.HasPrefix(image, "docker:"):
		// docker:IMAGE is a container image: the VM boots the default
		// image and the task runs in the container there.
		image = DefaultImage
	case !strings.Contains(image, "/"):
		image = "projects/" + p.cfg.Project + "/global/images/" + image
	}
	params := &computepb.AttachedDiskInitializeParams{SourceImage: proto.String(image)}
	if r.DiskSize > 0 {
		params.DiskSizeGb = proto.Int64(int64(r.DiskSize))
	}
	params.DiskType = proto.String(fmt.Sprintf("zones/%s/diskTypes/%s", zone, diskType))
	if iops > 0 {
		params.ProvisionedIops = proto.Int64(iops)
	}
	sched := &computepb.Scheduling{
		ProvisioningModel: proto.String("STANDARD"),
		AutomaticRestart:  proto.Bool(true),
		OnHostMaintenance: proto.String("MIGRATE"),
	}
	if len(mt.Accelerators) > 0 {
		// VMs with GPUs cannot live-migrate.
		sched.OnHostMaintenance = proto.String("TERMINATE")
	}
	if r.UseSpot {
		sched = &computepb.Scheduling{
			ProvisioningModel:         proto.String("SPOT"),
			InstanceTerminationAction: proto.String(p.cfg.TerminationAction),
			AutomaticRestart:          proto.Bool(false),
			OnHostMaintenance:         proto.String("TERMINATE"),
		}
	}
	nic := &computepb.NetworkInterface{
		Network: proto.String("global/networks/default"),
		AccessConfigs: []*computepb.AccessConfig{{
			Name: proto.String("External NAT"), Type: proto.String("ONE_TO_ONE_NAT"),
		}},
	}
	var perf *computepb.NetworkPerformanceConfig
	if tier1 {
		nic.NicType = proto.String("GVNIC")
		perf = &computepb.NetworkPerformanceConfig{TotalEgressBandwidthTier: proto.String("TIER_1")}
	}
	var accounts []*computepb.ServiceAccount
	if spec.Buckets {
		// The sync program on the VM finds these credentials through the
		// metadata server, as every Google client does.
		accounts = []*computepb.ServiceAccount{{Email: proto.String(p.cfg.ServiceAccount), Scopes: []string{StorageScope}}}
	}
	return &computepb.Instance{
		Name:            proto.String(instanceName(spec.Name, rank)),
		ServiceAccounts: accounts,
		MachineType:     proto.String(fmt.Sprintf("zones/%s/machineTypes/%s", zone, mt.Name)),
		Labels:          clusterLabels(spec, rank),
		Disks: []*computepb.AttachedDisk{{
			Boot: proto.Bool(true), AutoDelete: proto.Bool(true), Type: proto.String("PERSISTENT"),
			InitializeParams: params,
		}},
		NetworkInterfaces:        []*computepb.NetworkInterface{nic},
		NetworkPerformanceConfig: perf,
		Metadata: &computepb.Metadata{Items: []*computepb.Items{{
			Key: proto.String("ssh-keys"), Value: proto.String(p.cfg.SSHUser + ":" + p.ssh.AuthorizedKey()),
		}}},
		Scheduling: sched,
		// The cluster's name targets its firewall rule (resources.ports).
		Tags: &computepb.Tags{Items: []string{"sortie", spec.Name}},
	}, nil
}

// tagLifetime is how long the image a tag resolved to is used before the
// family is asked again: families gain an image every few weeks, so a
// controller that runs for months moves to the newer ones.
const tagLifetime = 6 * time.Hour

// resolvedTag is the image a SkyPilot tag resolved to, and when.
type resolvedTag struct {
	image string
	at    time.Time
}

// taggedImage returns image, or when it is a SkyPilot image tag
// (skypilot:TAG) the image the tag resolves to: the newest image of the
// tag's family in its public project (imagetag.GCP), as
// projects/P/global/images/NAME, cached for tagLifetime (images are
// global). A tag GCP has no family for, or a family the cloud does not
// know, is a prechecks error naming both.
func (p *Provider) taggedImage(ctx context.Context, image string) (string, error) {
	tag, ok := imagetag.Parse(image)
	if !ok {
		return image, nil
	}
	look, ok := imagetag.GCP()[tag]
	if !ok {
		return "", provision.Prechecks(fmt.Errorf("resources.image_id: %w", imagetag.Unknown(image, CloudName, imagetag.Names(imagetag.GCP()))))
	}
	now := p.cfg.Now()
	p.mu.Lock()
	got, cached := p.tags[tag]
	p.mu.Unlock()
	if cached && now.Sub(got.at) < tagLifetime {
		return got.image, nil
	}
	img, err := p.api.ImageFromFamily(ctx, look.Project, look.Family)
	switch {
	case isNotFound(err):
		return "", provision.Prechecks(fmt.Errorf("resources.image_id: %s: project %s has no image family %s (%v); give an image (projects/.../global/images/...) instead",
			image, look.Project, look.Family, err))
	case err != nil:
		return "", classify(fmt.Errorf("resources.image_id: look up %s (%s): %w", image, look.Describe(), err))
	}
	resolved := "projects/" + look.Project + "/global/images/" + img.GetName()
	p.mu.Lock()
	p.tags[tag] = resolvedTag{image: resolved, at: now}
	p.mu.Unlock()
	p.logger(ctx).Info("image tag resolved", "image_id", image, "image", resolved, "family", look.Family)
	return resolved, nil
}

// insert asks for one VM. Its request id is deterministic, so a retry of a
// call whose answer was lost gets the first call's operation back. An
// answer that is already DONE is such an earlier operation: when it failed
// (a stockout an hour ago), or its VM has since been deleted, the next
// generation of request id asks afresh.
func (p *Provider) insert(ctx context.Context, zone string, in *computepb.Instance) (*computepb.Operation, error) {
	name := in.GetName()
	var last error
	for gen := range maxInsertGenerations {
		id := insertRequestID(p.cfg.Project, zone, name, gen)
		op, err := p.api.InsertInstance(ctx, p.cfg.Project, zone, id, in)
		if err != nil {
			if isAlreadyExists(err) {
				return nil, fmt.Errorf("insert %s in %s: the name is still taken by a VM being deleted; retry later: %w", name, zone, err)
			}
			return nil, classify(fmt.Errorf("insert %s in %s: %w", name, zone, err))
		}
		if op.GetStatus() != computepb.Operation_DONE {
			return op, nil
		}
		if last = operationError(op); last != nil {
			continue
		}
		_, err = p.api.GetInstance(ctx, p.cfg.Project, zone, name)
		if err == nil {
			return op, nil
		}
		if !isNotFound(err) {
			return nil, classify(fmt.Errorf("insert %s in %s: look for the VM: %w", name, zone, err))
		}
		last = fmt.Errorf("insert %s in %s: an earlier insert succeeded but its VM is gone", name, zone)
	}
	return nil, last
}

// wait polls a zone operation until it is DONE and returns its error. The
// loop is sortie's own, short and bounded, because the library's Wait
// backs off to a minute between polls and reports success for an
// operation that finished with an error.
func (p *Provider) wait(ctx context.Context, zone string, op *computepb.Operation) error {
	return p.waitOp(ctx, op, func(name string) (*computepb.Operation, error) {
		op, err := p.api.GetOperation(ctx, p.cfg.Project, zone, name)
		if err != nil {
			return nil, classify(fmt.Errorf("poll operation %s in %s: %w", name, zone, err))
		}
		return op, nil
	})
}

// waitGlobal is wait for a global operation (on a firewall rule).
func (p *Provider) waitGlobal(ctx context.Context, op *computepb.Operation) error {
	return p.waitOp(ctx, op, func(name string) (*computepb.Operation, error) {
		op, err := p.api.GetGlobalOperation(ctx, p.cfg.Project, name)
		if err != nil {
			return nil, classify(fmt.Errorf("poll global operation %s: %w", name, err))
		}
		return op, nil
	})
}

func (p *Provider) waitOp(ctx context.Context, op *computepb.Operation, get func(name string) (*computepb.Operation, error)) error {
	wait := vm.NewDeadline(p.cfg.Now, p.cfg.PollInterval, p.cfg.OperationTimeout)
	for op.GetStatus() != computepb.Operation_DONE {
		if err := wait.Pause(ctx, fmt.Sprintf("operation %s (%s %s), still %s", op.GetName(), op.GetOperationType(),
			lastSegment(op.GetTargetLink()), op.GetStatus())); err != nil {
			return err
		}
		next, err := get(op.GetName())
		if err != nil {
			return err
		}
		op = next
	}
	return operationError(op)
}

// errLostWhileBooting is a VM stopped or deleted before it ever ran: a
// spot VM taken back at once, which another zone may not do.
var errLostWhileBooting = errors.New("a VM was stopped or deleted while booting")

// waitRunning polls until every VM of the cluster is RUNNING and, unless
// SkipSSHCheck, answers SSH.
func (p *Provider) waitRunning(ctx context.Context, spec provision.ClusterSpec) (*provision.Cluster, error) {
	wait := vm.NewDeadline(p.cfg.Now, p.cfg.PollInterval, p.cfg.LaunchTimeout)
	for {
		c, err := p.describe(ctx, spec.Name)
		if err != nil {
			return nil, err
		}
		running := 0
		for _, n := range c.Nodes {
			switch n.State {
			case provision.NodeRunning:
				running++
			case provision.NodePending:
			default:
				return nil, provision.Capacity(fmt.Errorf("%w: node %d is %s (%s)", errLostWhileBooting, n.Rank, n.State, n.Reason))
			}
		}
		if running == spec.NumNodes && len(c.Nodes) == spec.NumNodes {
			if p.cfg.SkipSSHCheck {
				return c, nil
			}
			return c, vm.AwaitSSH(ctx, c, p.Runner, wait)
		}
		if err := wait.Pause(ctx, "VMs of "+spec.Name+" to run ("+summary(c)+")"); err != nil {
			return nil, err
		}
	}
}

func summary(c *provision.Cluster) string {
	var parts []string
	for _, n := range c.Nodes {
		parts = append(parts, fmt.Sprintf("node %d %s", n.Rank, n.State))
	}
	return strings.Join(parts, ", ")
}
