package gcp

import (
	"context"
	"errors"
	"io"
	"iter"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
)

// computeAPI is the part of Compute Engine sortie uses, with the client
// library's iterators and operation handles flattened into plain values.
// clients implements it over the REST clients.
type computeAPI interface {
	Zones(ctx context.Context, project string) ([]*computepb.Zone, error)
	// MachineTypes maps zone -> the machine types offered there.
	MachineTypes(ctx context.Context, project string) (map[string][]*computepb.MachineType, error)
	InsertInstance(ctx context.Context, project, zone, requestID string, in *computepb.Instance) (*computepb.Operation, error)
	GetInstance(ctx context.Context, project, zone, name string) (*computepb.Instance, error)
	DeleteInstance(ctx context.Context, project, zone, name, requestID string) (*computepb.Operation, error)
	// Instances lists the project's instances in every zone that pass
	// filter. A zone that cannot answer fails the call rather than hiding
	// its instances, which would look deleted.
	Instances(ctx context.Context, project, filter string) ([]*computepb.Instance, error)
	GetOperation(ctx context.Context, project, zone, name string) (*computepb.Operation, error)
	// Operations lists the project's operations in every scope that pass filter.
	Operations(ctx context.Context, project, filter string) ([]*computepb.Operation, error)
	InsertFirewall(ctx context.Context, project string, fw *computepb.Firewall) (*computepb.Operation, error)
	DeleteFirewall(ctx context.Context, project, name string) (*computepb.Operation, error)
	// Firewalls lists the project's firewall rules that pass filter.
	Firewalls(ctx context.Context, project, filter string) ([]*computepb.Firewall, error)
	GetGlobalOperation(ctx context.Context, project, name string) (*computepb.Operation, error)
	// ImageFromFamily is the newest image of family in project that is
	// not deprecated (images.getFromFamily).
	ImageFromFamily(ctx context.Context, project, family string) (*computepb.Image, error)
	Close() error
}

// clients is computeAPI over the library's REST clients.
type clients struct {
	instances    *compute.InstancesClient
	zoneOps      *compute.ZoneOperationsClient
	globalOps    *compute.GlobalOperationsClient
	zones        *compute.ZonesClient
	machineTypes *compute.MachineTypesClient
	firewalls    *compute.FirewallsClient
	images       *compute.ImagesClient
	opened       []io.Closer // those made so far, for Close
}

var _ computeAPI = (*clients)(nil)

func newClients(ctx context.Context, opts ...option.ClientOption) (*clients, error) {
	c := &clients{}
	var err error
	c.instances = open(ctx, c, &err, compute.NewInstancesRESTClient, opts)
	c.zoneOps = open(ctx, c, &err, compute.NewZoneOperationsRESTClient, opts)
	c.globalOps = open(ctx, c, &err, compute.NewGlobalOperationsRESTClient, opts)
	c.zones = open(ctx, c, &err, compute.NewZonesRESTClient, opts)
	c.machineTypes = open(ctx, c, &err, compute.NewMachineTypesRESTClient, opts)
	c.firewalls = open(ctx, c, &err, compute.NewFirewallsRESTClient, opts)
	c.images = open(ctx, c, &err, compute.NewImagesRESTClient, opts)
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// open makes one client, unless an earlier one failed (*err is set), and
// keeps it for Close.
func open[T io.Closer](ctx context.Context, c *clients, err *error,
	newClient func(context.Context, ...option.ClientOption) (T, error), opts []option.ClientOption) T {
	var client T
	if *err != nil {
		return client
	}
	if client, *err = newClient(ctx, opts...); *err == nil {
		c.opened = append(c.opened, client)
	}
	return client
}

func (c *clients) Close() error {
	var errs []error
	for _, client := range c.opened {
		errs = append(errs, client.Close())
	}
	return errors.Join(errs...)
}

// collect lists what each page item holds (one zone; the instances of one
// scope of an aggregated list), stopping at the first error.
func collect[I, T any](items iter.Seq2[I, error], holds func(I) []T) ([]T, error) {
	var out []T
	for item, err := range items {
		if err != nil {
			return nil, err
		}
		out = append(out, holds(item)...)
	}
	return out, nil
}

// one is what a plain list's item holds: itself.
func one[T any](v T) []T { return []T{v} }

func (c *clients) Zones(ctx context.Context, project string) ([]*computepb.Zone, error) {
	return collect(c.zones.List(ctx, &computepb.ListZonesRequest{Project: project}).All(), one[*computepb.Zone])
}

func (c *clients) MachineTypes(ctx context.Context, project string) (map[string][]*computepb.MachineType, error) {
	all, err := collect(c.machineTypes.AggregatedList(ctx, &computepb.AggregatedListMachineTypesRequest{Project: project}).All(),
		func(p compute.MachineTypesScopedListPair) []*computepb.MachineType { return p.Value.GetMachineTypes() })
	if err != nil {
		return nil, err
	}
	out := map[string][]*computepb.MachineType{}
	for _, mt := range all {
		zone := lastSegment(mt.GetZone())
		out[zone] = append(out[zone], mt)
	}
	return out, nil
}

func (c *clients) InsertInstance(ctx context.Context, project, zone, requestID string, in *computepb.Instance) (*computepb.Operation, error) {
	op, err := c.instances.Insert(ctx, &computepb.InsertInstanceRequest{
		Project: project, Zone: zone, InstanceResource: in, RequestId: proto.String(requestID),
	})
	if err != nil {
		return nil, err
	}
	return op.Proto(), nil
}

func (c *clients) GetInstance(ctx context.Context, project, zone, name string) (*computepb.Instance, error) {
	return c.instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: name})
}

func (c *clients) DeleteInstance(ctx context.Context, project, zone, name, requestID string) (*computepb.Operation, error) {
	op, err := c.instances.Delete(ctx, &computepb.DeleteInstanceRequest{
		Project: project, Zone: zone, Instance: name, RequestId: proto.String(requestID),
	})
	if err != nil {
		return nil, err
	}
	return op.Proto(), nil
}

func (c *clients) Instances(ctx context.Context, project, filter string) ([]*computepb.Instance, error) {
	return collect(c.instances.AggregatedList(ctx, &computepb.AggregatedListInstancesRequest{
		Project: project, Filter: proto.String(filter),
	}).All(), func(p compute.InstancesScopedListPair) []*computepb.Instance { return p.Value.GetInstances() })
}

func (c *clients) GetOperation(ctx context.Context, project, zone, name string) (*computepb.Operation, error) {
	return c.zoneOps.Get(ctx, &computepb.GetZoneOperationRequest{Project: project, Zone: zone, Operation: name})
}

func (c *clients) Operations(ctx context.Context, project, filter string) ([]*computepb.Operation, error) {
	return collect(c.globalOps.AggregatedList(ctx, &computepb.AggregatedListGlobalOperationsRequest{
		Project: project, Filter: proto.String(filter),
	}).All(), func(p compute.OperationsScopedListPair) []*computepb.Operation { return p.Value.GetOperations() })
}

func (c *clients) InsertFirewall(ctx context.Context, project string, fw *computepb.Firewall) (*computepb.Operation, error) {
	op, err := c.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{Project: project, FirewallResource: fw})
	if err != nil {
		return nil, err
	}
	return op.Proto(), nil
}

func (c *clients) DeleteFirewall(ctx context.Context, project, name string) (*computepb.Operation, error) {
	op, err := c.firewalls.Delete(ctx, &computepb.DeleteFirewallRequest{Project: project, Firewall: name})
	if err != nil {
		return nil, err
	}
	return op.Proto(), nil
}

func (c *clients) Firewalls(ctx context.Context, project, filter string) ([]*computepb.Firewall, error) {
	return collect(c.firewalls.List(ctx, &computepb.ListFirewallsRequest{Project: project, Filter: proto.String(filter)}).All(),
		one[*computepb.Firewall])
}

func (c *clients) GetGlobalOperation(ctx context.Context, project, name string) (*computepb.Operation, error) {
	return c.globalOps.Get(ctx, &computepb.GetGlobalOperationRequest{Project: project, Operation: name})
}

func (c *clients) ImageFromFamily(ctx context.Context, project, family string) (*computepb.Image, error) {
	return c.images.GetFromFamily(ctx, &computepb.GetFromFamilyImageRequest{Project: project, Family: family})
}
