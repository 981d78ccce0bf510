// Package local is sortie's default provider: each node of a cluster is a
// directory under $SORTIE_HOME/local and the process groups the task agent
// starts on this machine. It offers named regions and zones from config so
// that placement and failover behave as on a cloud, and lets tests and demos
// make the weather: Preempt takes a node away as a spot interruption would,
// SetCapacity turns a region or zone's capacity off.
//
// State is files, because the CLI and the controller daemon are separate
// processes that both touch it: every write is a rename of a complete file,
// and every read-modify-write holds a flock on $SORTIE_HOME/local/lock.
//
// It must not import sortie/controller/...: a provider knows nothing of jobs.
package local

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sortie/provision"
	"sortie/schema"
)

// CloudName is the provider's name in resources.cloud.
const CloudName = "local"

// Config configures the local provider.
type Config struct {
	// Home is $SORTIE_HOME; the provider keeps its state under Home/local.
	Home string
	// Regions are the regions and zones offered, in order of preference;
	// empty means DefaultRegions.
	Regions []Region
	// Sandbox is local.sandbox: SandboxAuto (""), SandboxOn or
	// SandboxOff.
	Sandbox string
	// Server says a shared server runs the tasks, for many users: it
	// makes SandboxAuto SandboxOn.
	Server bool
	// Now is the clock that tells when a notice's deadline has come; nil
	// is the real one.
	Now func() time.Time
	// Probe says whether this machine can sandbox tasks; nil is
	// ProbeSandbox, which looks for bubblewrap and runs it once.
	Probe func() SandboxStatus
}

// Region is one named region of the local provider.
type Region struct {
	Name  string
	Zones []string
}

// DefaultRegions is one region "local" with zones "local-a" and "local-b".
func DefaultRegions() []Region {
	return []Region{{Name: "local", Zones: []string{"local-a", "local-b"}}}
}

// Provider runs clusters on this machine. It holds no state of its own: two
// Provider values over the same Home see the same clusters.
type Provider struct {
	home    string
	regions []Region
	grace   time.Duration // Terminate's wait between SIGTERM and SIGKILL
	now     func() time.Time
	ids     *idBlock // instance numbers reserved, shared by copies
	recs    *recordCache
	// sandboxMode, server and probe are Config's Sandbox, Server and
	// Probe.
	sandboxMode string
	server      bool
	probe       func() SandboxStatus
}

// terminateGrace is how long Terminate lets a node's processes handle
// SIGTERM before SIGKILL.
const terminateGrace = 2 * time.Second

var _ provision.Provider = (*Provider)(nil)

// New returns the local provider over cfg.Home.
func New(cfg Config) *Provider {
	home := cfg.Home
	if home != "" {
		// Node directories must be absolute: the agent and the processes
		// it starts find each other by them.
		if abs, err := filepath.Abs(home); err == nil {
			home = abs
		}
	}
	regions := cfg.Regions
	if len(regions) == 0 {
		regions = DefaultRegions()
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	mode := cfg.Sandbox
	if mode == "" {
		mode = SandboxAuto
	}
	probe := cfg.Probe
	if probe == nil {
		probe = ProbeSandbox
	}
	return &Provider{home: home, regions: regions, grace: terminateGrace, now: now, ids: &idBlock{}, recs: &recordCache{},
		sandboxMode: mode, server: cfg.Server, probe: probe}
}

// Name is "local".
func (p *Provider) Name() string { return CloudName }

// Placements lists every configured zone (or the region, when it has no
// zones) that r's cloud, region and zone allow, in config order.
func (p *Provider) Placements(ctx context.Context, r schema.Resources) ([]schema.Placement, error) {
	if r.Cloud != "" && r.Cloud != CloudName {
		return nil, provision.Prechecks(fmt.Errorf("resources.cloud %q: the local provider serves only %q", r.Cloud, CloudName))
	}
	if _, err := p.sandbox(); err != nil {
		return nil, provision.Prechecks(fmt.Errorf("cloud local: %w", err))
	}
	var out []schema.Placement
	regionFound := false
	for _, reg := range p.regions {
		if r.Region != "" && reg.Name != r.Region {
			continue
		}
		regionFound = true
		if len(reg.Zones) == 0 && r.Zone == "" {
			out = append(out, schema.Placement{Cloud: CloudName, Region: reg.Name})
		}
		for _, z := range reg.Zones {
			if r.Zone == "" || z == r.Zone {
				out = append(out, schema.Placement{Cloud: CloudName, Region: reg.Name, Zone: z})
			}
		}
	}
	if !regionFound {
		return nil, provision.Prechecks(fmt.Errorf("resources.region %q: not a local region; offered: %s (set local.regions in config.yaml to add one)",
			r.Region, p.offered()))
	}
	if len(out) == 0 {
		return nil, provision.Prechecks(fmt.Errorf("resources.zone %q: not a local zone%s; offered: %s",
			r.Zone, inRegion(r.Region), p.offered()))
	}
	return out, nil
}

// offers reports whether at is one of the configured placements.
func (p *Provider) offers(at schema.Placement) bool {
	for _, reg := range p.regions {
		if reg.Name != at.Region {
			continue
		}
		if at.Zone == "" {
			return true
		}
		if slices.Contains(reg.Zones, at.Zone) {
			return true
		}
	}
	return false
}

func (p *Provider) offered() string {
	var s []string
	for _, reg := range p.regions {
		if len(reg.Zones) == 0 {
			s = append(s, reg.Name)
		}
		for _, z := range reg.Zones {
			s = append(s, reg.Name+"/"+z)
		}
	}
	return strings.Join(s, ", ")
}

func inRegion(region string) string {
	if region == "" {
		return ""
	}
	return " in region " + region
}
