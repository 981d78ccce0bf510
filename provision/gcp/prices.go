package gcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	billing "cloud.google.com/go/billing/apiv1"
	"cloud.google.com/go/billing/apiv1/billingpb"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"sortie/provision"
	"sortie/provision/gcp/adc"
	"sortie/provision/price"
)

// ComputeEngineService is the Compute Engine service in the Cloud
// Billing Catalog.
const ComputeEngineService = "services/6F81-5844-456A"

// SourceCatalog is where GCP prices come from, as `sortie prices` shows it.
const SourceCatalog = "gcp billing catalog " + ComputeEngineService + "/skus"

// skuLister lists a service's SKUs; the Cloud Billing Catalog client
// implements it through catalogClient.
type skuLister interface {
	Skus(ctx context.Context, service string) ([]*billingpb.Sku, error)
}

type catalogClient struct{ c *billing.CloudCatalogClient }

func (c catalogClient) Skus(ctx context.Context, service string) ([]*billingpb.Sku, error) {
	it := c.c.ListSkus(ctx, &billingpb.ListSkusRequest{Parent: service, CurrencyCode: "USD"})
	var out []*billingpb.Sku
	for {
		s, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}

// Prices reads Compute Engine's prices (price.Fetcher) from the Cloud
// Billing Catalog: a machine type costs its vCPUs at its family's core
// SKU, its memory at its family's RAM SKU, and its GPUs at their GPU SKU,
// on-demand (usage type OnDemand) or spot (Preemptible), in its region.
// The sizes of the machine types are the Compute Engine API's.
type Prices struct {
	cfg     Config
	api     computeAPI
	catalog skuLister

	mu    sync.Mutex
	zones map[string]string
	types map[string][]machineType
}

// NewPrices builds the reader of Compute Engine prices with cfg's project
// and endpoints (Home need not be set). It calls nothing.
func NewPrices(ctx context.Context, cfg Config) (*Prices, error) {
	e := osEnv()
	if cfg.Project == "" {
		cfg.Project = adc.Find(ctx, e, cfg.Endpoint, cfg.Project).Project
		if cfg.Project == "" {
			return nil, provision.Prechecks(fmt.Errorf("gcp prices: no project: set gcp.project in config.yaml or GOOGLE_CLOUD_PROJECT"))
		}
	}
	opts := slices.Clone(cfg.ClientOptions)
	if cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.Endpoint), option.WithoutAuthentication())
	}
	api, err := newClients(ctx, opts...)
	if err != nil {
		return nil, provision.Prechecks(fmt.Errorf("gcp prices: create Compute Engine clients: %w", err))
	}
	bopts := slices.Clone(cfg.ClientOptions)
	if cfg.BillingEndpoint != "" {
		bopts = append(bopts, option.WithEndpoint(cfg.BillingEndpoint), option.WithoutAuthentication())
	}
	bc, err := billing.NewCloudCatalogRESTClient(ctx, bopts...)
	if err != nil {
		api.Close()
		return nil, provision.Prechecks(fmt.Errorf("gcp prices: create the Cloud Billing Catalog client: %w", err))
	}
	var capi computeAPI = api
	if cfg.Calls != nil {
		capi = counted{api: api, calls: cfg.Calls}
	}
	return &Prices{cfg: cfg, api: capi, catalog: catalogClient{bc}}, nil
}

// machineTypes loads the project's machine types once.
func (p *Prices) machineTypes(ctx context.Context) (map[string]string, map[string][]machineType, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.types != nil {
		return p.zones, p.types, nil
	}
	zones, types, err := loadCatalog(ctx, p.api, p.cfg.Project)
	if err != nil {
		return nil, nil, err
	}
	p.zones, p.types = zones, types
	return zones, types, nil
}

// sku is what sortie reads of a Compute Engine SKU.
type sku struct {
	// desc is the description in lower case, without its "spot
	// preemptible " or "preemptible " start.
	desc      string
	group     string // CPU, RAM, GPU
	spot      bool
	regions   []string
	usd       float64 // per usage unit: a core-hour, a GiB-hour, a GPU-hour
	effective time.Time
}

// Prices answers each key of GCP whose region offers its machine type,
// with a price for the whole region (Zone ""): Compute Engine prices a
// machine type alike in every zone of a region. A key whose type or one of
// whose SKUs is not found is left out.
func (p *Prices) Prices(ctx context.Context, keys []price.Key) ([]price.Quote, error) {
	var mine []price.Key
	for _, k := range keys {
		if k.Cloud == CloudName && k.Region != "" && k.InstanceType != "" {
			mine = append(mine, k)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	zones, types, err := p.machineTypes(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := p.catalog.Skus(ctx, ComputeEngineService)
	if err != nil {
		return nil, fmt.Errorf("list the SKUs of Compute Engine (Cloud Billing Catalog %s/skus): %w", ComputeEngineService, err)
	}
	skus := parseSkus(raw)
	var out []price.Quote
	seen := map[price.Key]bool{}
	for _, k := range mine {
		key := price.Key{Cloud: CloudName, Region: k.Region, InstanceType: k.InstanceType, Spot: k.Spot}
		if seen[key] {
			continue
		}
		seen[key] = true
		mt, ok := typeIn(zones, types, k.Region, k.InstanceType)
		if !ok || mt.shared {
			continue
		}
		perHour, eff, ok := machinePrice(skus, mt, k.Region, k.Spot)
		if !ok {
			continue
		}
		out = append(out, price.Quote{Key: key, PerHour: perHour, Source: SourceCatalog, Effective: eff})
	}
	return out, nil
}

// typeIn finds the machine type name in a zone of region.
func typeIn(zones map[string]string, types map[string][]machineType, region, name string) (machineType, bool) {
	zs := make([]string, 0)
	for z, r := range zones {
		if r == region {
			zs = append(zs, z)
		}
	}
	sort.Strings(zs)
	for _, z := range zs {
		for _, mt := range types[z] {
			if mt.Name == name {
				return mt, true
			}
		}
	}
	return machineType{}, false
}

// parseSkus keeps the SKUs priced per hour in USD, each at its current
// price (the last pricing info, the highest tier: the price past any free
// usage).
func parseSkus(raw []*billingpb.Sku) []sku {
	var out []sku
	for _, s := range raw {
		infos := s.GetPricingInfo()
		if len(infos) == 0 {
			continue
		}
		info := infos[len(infos)-1]
		rates := info.GetPricingExpression().GetTieredRates()
		if len(rates) == 0 {
			continue
		}
		unit := rates[len(rates)-1].GetUnitPrice()
		if unit.GetCurrencyCode() != "" && unit.GetCurrencyCode() != "USD" {
			continue
		}
		usage := s.GetCategory().GetUsageType()
		if usage != "OnDemand" && usage != "Preemptible" {
			continue
		}
		desc := strings.ToLower(s.GetDescription())
		desc = strings.TrimPrefix(desc, "spot ")
		desc = strings.TrimPrefix(desc, "preemptible ")
		out = append(out, sku{
			desc: desc, group: s.GetCategory().GetResourceGroup(), spot: usage == "Preemptible",
			regions:   s.GetServiceRegions(),
			usd:       float64(unit.GetUnits()) + float64(unit.GetNanos())/1e9,
			effective: info.GetEffectiveTime().AsTime(),
		})
	}
	return out
}

// machinePrice is what one VM of mt costs an hour in region: its vCPUs,
// its memory and its GPUs, each at its SKU, and when the newest of those
// prices took effect.
func machinePrice(skus []sku, mt machineType, region string, spot bool) (float64, time.Time, bool) {
	family := mt.Name
	if i := strings.IndexByte(family, '-'); i > 0 {
		family = family[:i]
	}
	var total float64
	var eff time.Time
	add := func(s sku, qty float64) {
		total += s.usd * qty
		if s.effective.After(eff) {
			eff = s.effective
		}
	}
	core, ok := findSku(skus, region, spot, "CPU", func(d string) bool { return familySku(d, family, "core") })
	if !ok {
		return 0, time.Time{}, false
	}
	add(core, mt.CPUs)
	ram, ok := findSku(skus, region, spot, "RAM", func(d string) bool { return familySku(d, family, "ram") })
	if !ok {
		return 0, time.Time{}, false
	}
	add(ram, mt.MemoryGiB)
	accs := make([]string, 0, len(mt.Accelerators))
	for a := range mt.Accelerators {
		accs = append(accs, a)
	}
	sort.Strings(accs)
	for _, a := range accs {
		words := strings.ReplaceAll(a, "-", " ") + " gpu"
		gpu, ok := findSku(skus, region, spot, "GPU", func(d string) bool {
			return strings.Contains(d, words) && !excluded(d)
		})
		if !ok {
			return 0, time.Time{}, false
		}
		add(gpu, float64(mt.Accelerators[a]))
	}
	return total, eff, true
}

// familySku says whether a SKU's description is the core or RAM price of
// a machine family's predefined types ("n2 instance core running in
// americas", "n2d amd instance ram running in ...").
func familySku(desc, family, what string) bool {
	return strings.HasPrefix(desc, family+" ") && strings.Contains(desc, " "+what) && !excluded(desc)
}

// excluded are the SKUs that are not the price of a plain VM: custom
// types' extended memory, sole-tenant nodes, commitments, reservations.
func excluded(desc string) bool {
	for _, w := range []string{"custom", "sole tenancy", "commitment", "reserved", "extended"} {
		if strings.Contains(desc, w) {
			return true
		}
	}
	return false
}

// findSku is the first SKU of group, spot or not, offered in region whose
// description match accepts.
func findSku(skus []sku, region string, spot bool, group string, match func(string) bool) (sku, bool) {
	for _, s := range skus {
		if s.group == group && s.spot == spot && slices.Contains(s.regions, region) && match(s.desc) {
			return s, true
		}
	}
	return sku{}, false
}
