package gcp

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sortie/provision"
	"sortie/provision/fit"
	"sortie/schema"
)

// machineType is what sortie needs of a Compute Engine machine type.
// Accelerators are named by their Compute Engine accelerator type, e.g.
// nvidia-tesla-a100.
type machineType struct {
	fit.Offer
	shared bool
}

// acceleratorMatches reports whether Compute Engine's accelerator type
// (nvidia-tesla-a100, nvidia-l4, nvidia-h100-80gb) is what a task calls
// name (A100, L4, H100, or the full type name).
func acceleratorMatches(gceType, name string) bool {
	name = strings.ToLower(name)
	if gceType == name {
		return true
	}
	return slices.Contains(strings.Split(gceType, "-"), name)
}

// catalog loads the zones and machine types once per provider: one
// zones.list and one machineTypes.aggregatedList.
func (p *Provider) catalog(ctx context.Context) (map[string]string, map[string][]machineType, error) {
	p.mu.Lock()
	zones, types := p.zones, p.types
	p.mu.Unlock()
	if zones != nil && types != nil {
		return zones, types, nil
	}
	zones, types, err := loadCatalog(ctx, p.api, p.cfg.Project)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	p.zones, p.types = zones, types
	p.mu.Unlock()
	return zones, types, nil
}

// loadCatalog reads the project's zones that are up (zone -> region) and
// the machine types each offers.
func loadCatalog(ctx context.Context, api computeAPI, project string) (map[string]string, map[string][]machineType, error) {
	zs, err := api.Zones(ctx, project)
	if err != nil {
		return nil, nil, classify(fmt.Errorf("list zones of project %s: %w", project, err))
	}
	zones := map[string]string{}
	for _, z := range zs {
		if z.GetStatus() == "UP" {
			zones[z.GetName()] = lastSegment(z.GetRegion())
		}
	}
	mts, err := api.MachineTypes(ctx, project)
	if err != nil {
		return nil, nil, classify(fmt.Errorf("list machine types of project %s: %w", project, err))
	}
	types := map[string][]machineType{}
	for zone, list := range mts {
		for _, mt := range list {
			if mt.GetDeprecated().GetState() != "" {
				continue
			}
			t := machineType{Offer: fit.Offer{Name: mt.GetName(), CPUs: float64(mt.GetGuestCpus()),
				MemoryGiB: float64(mt.GetMemoryMb()) / 1024, Accelerators: map[string]int{}}, shared: mt.GetIsSharedCpu()}
			for _, a := range mt.GetAccelerators() {
				t.Accelerators[a.GetGuestAcceleratorType()] += int(a.GetGuestAcceleratorCount())
			}
			types[zone] = append(types[zone], t)
		}
	}
	return zones, types, nil
}

// resolveType returns the machine type to launch for r in zone, or false
// when the zone offers none that fits. Shared-core types are launched only
// by name: their CPU is a fraction of a core, whatever guestCpus says.
func resolveType(types []machineType, r schema.Resources) (machineType, bool, error) {
	if r.InstanceType != "" {
		for _, t := range types {
			if t.Name == r.InstanceType {
				return t, true, nil
			}
		}
		return machineType{}, false, nil
	}
	req, err := fit.ParseRequest(r, acceleratorMatches)
	if err != nil {
		return machineType{}, false, provision.Prechecks(err)
	}
	var offers []fit.Offer
	for _, t := range types {
		// network_tier best can only be had on some types: pick among them.
		if !t.shared && (r.NetworkTier != "best" || tier1OK(t)) {
			offers = append(offers, t.Offer)
		}
	}
	o, ok := fit.Smallest(offers, req)
	return machineType{Offer: o}, ok, nil
}

// Placements implements provision.Provider: the zones of the configured
// regions (or the one region or zone r pins) that offer a machine type
// for r, regions in configured order, zones by name.
func (p *Provider) Placements(ctx context.Context, r schema.Resources) ([]schema.Placement, error) {
	if r.Cloud != "" && r.Cloud != CloudName {
		return nil, nil
	}
	regions := p.cfg.Regions
	if r.Region != "" {
		if !slices.Contains(p.cfg.Regions, r.Region) {
			if r.Cloud == "" {
				return nil, nil // asked of every cloud; not one of ours
			}
			return nil, provision.Prechecks(fmt.Errorf("resources.region: %q is not among the GCP regions sortie uses (%s); add it to gcp.regions in config.yaml",
				r.Region, strings.Join(p.cfg.Regions, ", ")))
		}
		regions = []string{r.Region}
	}
	zones, types, err := p.catalog(ctx)
	if err != nil {
		return nil, err
	}
	var out []schema.Placement
	for _, region := range regions {
		var names []string
		for z, reg := range zones {
			if reg == region && (r.Zone == "" || r.Zone == z) {
				names = append(names, z)
			}
		}
		sort.Strings(names)
		for _, z := range names {
			_, ok, err := resolveType(types[z], r)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, schema.Placement{Cloud: CloudName, Region: region, Zone: z})
			}
		}
	}
	if len(out) == 0 && r.Cloud == CloudName {
		return nil, provision.Prechecks(fmt.Errorf("no zone of the GCP regions %s offers %s; %s",
			strings.Join(regions, ", "), describeRequest(r), "relax the request, set resources.instance_type, or add regions to gcp.regions"))
	}
	return out, nil
}

// describeRequest says what r asks for, for error messages.
func describeRequest(r schema.Resources) string {
	if r.InstanceType != "" {
		s := fmt.Sprintf("machine type %q", r.InstanceType)
		if r.Zone != "" {
			s += " in zone " + r.Zone
		}
		return s
	}
	s := fmt.Sprintf("a machine type with cpus %s, memory %s GB", orAny(r.CPUs), orAny(r.Memory))
	if len(r.Accelerators) > 0 {
		s += fmt.Sprintf(" and built-in accelerators %v", r.Accelerators)
	}
	if r.Zone != "" {
		s += " in zone " + r.Zone
	}
	return s
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}
