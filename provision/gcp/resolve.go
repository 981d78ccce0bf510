package gcp

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sortie/provision"
	"sortie/schema"
)

// Defaults for a task that names no machine type, CPUs or memory: a
// general-purpose machine with room for a typical script.
const (
	defaultCPUs   = "2+"
	defaultMemory = "8+"
)

// machineType is what sortie needs of a Compute Engine machine type.
type machineType struct {
	name         string
	cpus         float64
	memoryGiB    float64
	shared       bool
	accelerators map[string]int // e.g. nvidia-tesla-a100 -> 1
}

// amount is a parsed cpus or memory request: exactly N, or at least N.
type amount struct {
	n       float64
	atLeast bool
	set     bool
}

func parseAmount(field, s string) (amount, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return amount{}, nil
	}
	a := amount{set: true}
	if strings.HasSuffix(s, "+") {
		a.atLeast = true
		s = strings.TrimSpace(strings.TrimSuffix(s, "+"))
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 {
		return amount{}, fmt.Errorf("resources.%s: %q is not an amount; use a number or \"N+\"", field, s)
	}
	a.n = n
	return a, nil
}

func (a amount) admits(v float64) bool {
	if !a.set {
		return true
	}
	if a.atLeast {
		return v >= a.n-1e-9
	}
	return v > a.n-1e-9 && v < a.n+1e-9
}

// typeRequest is what a machine type must satisfy.
type typeRequest struct {
	cpus, memory amount
	accelerators map[string]int
}

func newTypeRequest(r schema.Resources) (typeRequest, error) {
	cpus, memory := r.CPUs, r.Memory
	if cpus == "" && memory == "" && len(r.Accelerators) == 0 {
		cpus, memory = defaultCPUs, defaultMemory
	}
	c, err := parseAmount("cpus", cpus)
	if err != nil {
		return typeRequest{}, err
	}
	m, err := parseAmount("memory", memory)
	if err != nil {
		return typeRequest{}, err
	}
	return typeRequest{cpus: c, memory: m, accelerators: r.Accelerators}, nil
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

// satisfies reports whether t fits req. Accelerators are alternatives, as
// in SkyPilot: any one name with at least its count will do; without any
// requested, types with accelerators and shared-core types are left out.
func (req typeRequest) satisfies(t machineType) bool {
	if t.shared || !req.cpus.admits(t.cpus) || !req.memory.admits(t.memoryGiB) {
		return false
	}
	if len(req.accelerators) == 0 {
		return len(t.accelerators) == 0
	}
	for name, count := range req.accelerators {
		for gt, have := range t.accelerators {
			if acceleratorMatches(gt, name) && have >= count {
				return true
			}
		}
	}
	return false
}

// smallestType picks the smallest type satisfying req: fewest vCPUs, then
// least memory, then by name for a stable choice.
func smallestType(all []machineType, req typeRequest) (machineType, bool) {
	var fit []machineType
	for _, t := range all {
		if req.satisfies(t) {
			fit = append(fit, t)
		}
	}
	if len(fit) == 0 {
		return machineType{}, false
	}
	sort.Slice(fit, func(i, j int) bool {
		a, b := fit[i], fit[j]
		if a.cpus != b.cpus {
			return a.cpus < b.cpus
		}
		if a.memoryGiB != b.memoryGiB {
			return a.memoryGiB < b.memoryGiB
		}
		return a.name < b.name
	})
	return fit[0], true
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
	zs, err := p.api.Zones(ctx, p.cfg.Project)
	if err != nil {
		return nil, nil, classify(fmt.Errorf("list zones of project %s: %w", p.cfg.Project, err))
	}
	zones = map[string]string{}
	for _, z := range zs {
		if z.GetStatus() == "UP" {
			zones[z.GetName()] = lastSegment(z.GetRegion())
		}
	}
	mts, err := p.api.MachineTypes(ctx, p.cfg.Project)
	if err != nil {
		return nil, nil, classify(fmt.Errorf("list machine types of project %s: %w", p.cfg.Project, err))
	}
	types = map[string][]machineType{}
	for zone, list := range mts {
		for _, mt := range list {
			if mt.GetDeprecated().GetState() != "" {
				continue
			}
			t := machineType{name: mt.GetName(), cpus: float64(mt.GetGuestCpus()),
				memoryGiB: float64(mt.GetMemoryMb()) / 1024, shared: mt.GetIsSharedCpu(), accelerators: map[string]int{}}
			for _, a := range mt.GetAccelerators() {
				t.accelerators[a.GetGuestAcceleratorType()] += int(a.GetGuestAcceleratorCount())
			}
			types[zone] = append(types[zone], t)
		}
	}
	p.mu.Lock()
	p.zones, p.types = zones, types
	p.mu.Unlock()
	return zones, types, nil
}

// resolveType returns the machine type to launch for r in zone, or false
// when the zone offers none that fits.
func resolveType(types []machineType, r schema.Resources) (machineType, bool, error) {
	if r.InstanceType != "" {
		for _, t := range types {
			if t.name == r.InstanceType {
				return t, true, nil
			}
		}
		return machineType{}, false, nil
	}
	req, err := newTypeRequest(r)
	if err != nil {
		return machineType{}, false, provision.Prechecks(err)
	}
	t, ok := smallestType(types, req)
	return t, ok, nil
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
