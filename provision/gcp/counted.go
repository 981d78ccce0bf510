package gcp

import (
	"context"

	"cloud.google.com/go/compute/apiv1/computepb"

	"sortie/provision"
)

// counted is a computeAPI that tells calls of each call made through it
// and of its error. Close is not a call to the API and is not counted.
type counted struct {
	api   computeAPI
	calls provision.APICalls
}

var _ computeAPI = counted{}

// count tells c.calls of one call named call, and returns its results.
func count[T any](c counted, call string, v T, err error) (T, error) {
	c.calls(call, err)
	return v, err
}

func (c counted) Zones(ctx context.Context, project string) ([]*computepb.Zone, error) {
	v, err := c.api.Zones(ctx, project)
	return count(c, "Zones", v, err)
}

func (c counted) MachineTypes(ctx context.Context, project string) (map[string][]*computepb.MachineType, error) {
	v, err := c.api.MachineTypes(ctx, project)
	return count(c, "MachineTypes", v, err)
}

func (c counted) InsertInstance(ctx context.Context, project, zone, requestID string, in *computepb.Instance) (*computepb.Operation, error) {
	v, err := c.api.InsertInstance(ctx, project, zone, requestID, in)
	return count(c, "InsertInstance", v, err)
}

func (c counted) GetInstance(ctx context.Context, project, zone, name string) (*computepb.Instance, error) {
	v, err := c.api.GetInstance(ctx, project, zone, name)
	return count(c, "GetInstance", v, err)
}

func (c counted) DeleteInstance(ctx context.Context, project, zone, name, requestID string) (*computepb.Operation, error) {
	v, err := c.api.DeleteInstance(ctx, project, zone, name, requestID)
	return count(c, "DeleteInstance", v, err)
}

func (c counted) Instances(ctx context.Context, project, filter string) ([]*computepb.Instance, error) {
	v, err := c.api.Instances(ctx, project, filter)
	return count(c, "Instances", v, err)
}

func (c counted) GetOperation(ctx context.Context, project, zone, name string) (*computepb.Operation, error) {
	v, err := c.api.GetOperation(ctx, project, zone, name)
	return count(c, "GetOperation", v, err)
}

func (c counted) Operations(ctx context.Context, project, filter string) ([]*computepb.Operation, error) {
	v, err := c.api.Operations(ctx, project, filter)
	return count(c, "Operations", v, err)
}

func (c counted) InsertFirewall(ctx context.Context, project string, fw *computepb.Firewall) (*computepb.Operation, error) {
	v, err := c.api.InsertFirewall(ctx, project, fw)
	return count(c, "InsertFirewall", v, err)
}

func (c counted) DeleteFirewall(ctx context.Context, project, name string) (*computepb.Operation, error) {
	v, err := c.api.DeleteFirewall(ctx, project, name)
	return count(c, "DeleteFirewall", v, err)
}

func (c counted) Firewalls(ctx context.Context, project, filter string) ([]*computepb.Firewall, error) {
	v, err := c.api.Firewalls(ctx, project, filter)
	return count(c, "Firewalls", v, err)
}

func (c counted) GetGlobalOperation(ctx context.Context, project, name string) (*computepb.Operation, error) {
	v, err := c.api.GetGlobalOperation(ctx, project, name)
	return count(c, "GetGlobalOperation", v, err)
}

func (c counted) ImageFromFamily(ctx context.Context, project, family string) (*computepb.Image, error) {
	v, err := c.api.ImageFromFamily(ctx, project, family)
	return count(c, "ImageFromFamily", v, err)
}

func (c counted) Close() error { return c.api.Close() }
