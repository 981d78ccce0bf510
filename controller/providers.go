package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"sortie/provision"
	"sortie/provision/local"
)

// ProviderSet opens each cloud's provider on first use and keeps it.
type ProviderSet struct {
	cfg Config
	// Extra builds providers for clouds other than local (aws, gcp, sim);
	// nil entries mean the cloud is not available in this build.
	Extra map[string]func(ctx context.Context, cfg Config) (provision.Provider, error)
	// Checks say whether each extra cloud is usable, for `sortie check`.
	Checks map[string]func(ctx context.Context, cfg Config) CloudCheck

	mu   sync.Mutex
	open map[string]provision.Provider
}

// NewProviderSet returns the providers of cfg; local is always there.
func NewProviderSet(cfg Config) *ProviderSet {
	return &ProviderSet{cfg: cfg, open: map[string]provision.Provider{}, Extra: map[string]func(context.Context, Config) (provision.Provider, error){},
		Checks: map[string]func(context.Context, Config) CloudCheck{}}
}

// Provider returns the provider of cloud ("" means local).
func (s *ProviderSet) Provider(ctx context.Context, cloud string) (provision.Provider, error) {
	if cloud == "" {
		cloud = "local"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.open[cloud]; ok {
		return p, nil
	}
	var p provision.Provider
	switch cloud {
	case "local":
		p = s.Local()
	default:
		build, ok := s.Extra[cloud]
		if !ok {
			return nil, fmt.Errorf("cloud %q is not supported by this controller (supported: %v)", cloud, s.names())
		}
		var err error
		if p, err = build(ctx, s.cfg); err != nil {
			return nil, fmt.Errorf("open %s: %w", cloud, err)
		}
	}
	s.open[cloud] = p
	return p, nil
}

// Local returns a local provider over the configured regions.
func (s *ProviderSet) Local() *local.Provider {
	return local.New(local.Config{Home: s.cfg.Home, Regions: s.LocalRegions()})
}

// LocalRegions are the local provider's regions: local.regions from the
// config, else the default region with two zones.
func (s *ProviderSet) LocalRegions() []local.Region {
	if len(s.cfg.Local.Regions) == 0 {
		return local.DefaultRegions()
	}
	var regions []local.Region
	for _, r := range s.cfg.Local.Regions {
		regions = append(regions, local.Region{Name: r.Name, Zones: r.Zones})
	}
	return regions
}

func (s *ProviderSet) names() []string {
	n := []string{"local"}
	for k := range s.Extra {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Clouds lists local and every cloud opened so far.
func (s *ProviderSet) Clouds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{"local"}
	for k := range s.open {
		if k != "local" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
