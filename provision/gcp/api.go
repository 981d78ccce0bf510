package gcp

import (
	"context"
	"errors"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
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
	Close() error
}

// clients is computeAPI over the library's REST clients.
type clients struct {
	instances    *compute.InstancesClient
	zoneOps      *compute.ZoneOperationsClient
	globalOps    *compute.GlobalOperationsClient
	zones        *compute.ZonesClient
	machineTypes *compute.MachineTypesClient
}

var _ computeAPI = (*clients)(nil)

func newClients(ctx context.Context, opts ...option.ClientOption) (*clients, error) {
	c := &clients{}
	var err error
	if c.instances, err = compute.NewInstancesRESTClient(ctx, opts...); err != nil {
		return nil, err
	}
	if c.zoneOps, err = compute.NewZoneOperationsRESTClient(ctx, opts...); err != nil {
		c.Close()
		return nil, err
	}
	if c.globalOps, err = compute.NewGlobalOperationsRESTClient(ctx, opts...); err != nil {
		c.Close()
		return nil, err
	}
	if c.zones, err = compute.NewZonesRESTClient(ctx, opts...); err != nil {
		c.Close()
		return nil, err
	}
	if c.machineTypes, err = compute.NewMachineTypesRESTClient(ctx, opts...); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *clients) Close() error {
	var errs []error
	if c.instances != nil {
		errs = append(errs, c.instances.Close())
	}
	if c.zoneOps != nil {
		errs = append(errs, c.zoneOps.Close())
	}
	if c.globalOps != nil {
		errs = append(errs, c.globalOps.Close())
	}
	if c.zones != nil {
		errs = append(errs, c.zones.Close())
	}
	if c.machineTypes != nil {
		errs = append(errs, c.machineTypes.Close())
	}
	return errors.Join(errs...)
}

func (c *clients) Zones(ctx context.Context, project string) ([]*computepb.Zone, error) {
	var out []*computepb.Zone
	it := c.zones.List(ctx, &computepb.ListZonesRequest{Project: project})
	for {
		z, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, z)
	}
}

func (c *clients) MachineTypes(ctx context.Context, project string) (map[string][]*computepb.MachineType, error) {
	out := map[string][]*computepb.MachineType{}
	it := c.machineTypes.AggregatedList(ctx, &computepb.AggregatedListMachineTypesRequest{Project: project})
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, mt := range pair.Value.GetMachineTypes() {
			zone := lastSegment(mt.GetZone())
			out[zone] = append(out[zone], mt)
		}
	}
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
	var out []*computepb.Instance
	it := c.instances.AggregatedList(ctx, &computepb.AggregatedListInstancesRequest{
		Project: project, Filter: proto.String(filter),
	})
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, pair.Value.GetInstances()...)
	}
}

func (c *clients) GetOperation(ctx context.Context, project, zone, name string) (*computepb.Operation, error) {
	return c.zoneOps.Get(ctx, &computepb.GetZoneOperationRequest{Project: project, Zone: zone, Operation: name})
}

func (c *clients) Operations(ctx context.Context, project, filter string) ([]*computepb.Operation, error) {
	var out []*computepb.Operation
	it := c.globalOps.AggregatedList(ctx, &computepb.AggregatedListGlobalOperationsRequest{
		Project: project, Filter: proto.String(filter),
	})
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, pair.Value.GetOperations()...)
	}
}
