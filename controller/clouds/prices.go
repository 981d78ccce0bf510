package clouds

import (
	"context"
	"time"

	"sortie/controller/config"
	"sortie/provision/price"
)

// ConfigPrices reads the prices of a cloud priced per resource in
// config.yaml (local.prices, sim.prices, kubernetes.prices): a node costs
// its node price, and each vCPU, GB of memory and accelerator of its
// shape (price.Shape, the key's InstanceType) at its price. A price holds
// in every region, so each quote's key names the cloud alone, and for all
// time: a change of config.yaml changes what every attempt cost.
type ConfigPrices struct {
	Cloud string
	// Key is where the prices are in config.yaml ("kubernetes.prices").
	Key   string
	Rates config.ResourcePrices
}

// configEffective is when a price of config.yaml took effect: always.
var configEffective = time.Unix(0, 0).UTC()

// Prices answers each key of the cloud whose shape parses; a key of
// another cloud, or whose shape does not parse, has no price.
func (c ConfigPrices) Prices(_ context.Context, keys []price.Key) ([]price.Quote, error) {
	var out []price.Quote
	seen := map[price.Key]bool{}
	for _, k := range keys {
		if k.Cloud != c.Cloud {
			continue
		}
		cpus, mem, accs, err := price.ParseShape(k.InstanceType)
		if err != nil {
			continue
		}
		p, source := c.Rates, "config.yaml "+c.Key
		if k.Spot && p.Spot != nil {
			p, source = *p.Spot, source+".spot"
		}
		perHour := p.NodeHour + cpus*p.CPUHour + mem*p.MemoryGBHour
		for n, count := range accs {
			perHour += float64(count) * p.AcceleratorHour[n]
		}
		key := price.Key{Cloud: c.Cloud, InstanceType: k.InstanceType, Spot: k.Spot}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, price.Quote{Key: key, PerHour: perHour, Source: source, Effective: configEffective})
	}
	return out, nil
}

// configPrices is the Prices entry of a cloud priced in config.yaml.
func configPrices(cloud string, of func(config.Config) config.ResourcePrices) func(context.Context, config.Config) (price.Fetcher, error) {
	return func(_ context.Context, cfg config.Config) (price.Fetcher, error) {
		return ConfigPrices{Cloud: cloud, Key: cloud + ".prices", Rates: of(cfg)}, nil
	}
}

// PriceFetchers are the fetchers of the clouds of cls that have one, by
// name; a cloud whose fetcher cannot be built is left out, its error in
// errs.
func PriceFetchers(ctx context.Context, cfg config.Config, cls []Cloud) (map[string]price.Fetcher, map[string]error) {
	fs, errs := map[string]price.Fetcher{}, map[string]error{}
	for _, c := range cls {
		if c.Prices == nil {
			continue
		}
		f, err := c.Prices(ctx, cfg)
		if err != nil {
			errs[c.Name] = err
			continue
		}
		fs[c.Name] = f
	}
	return fs, errs
}

// FixedPriceKeys are the keys read at every refresh whether or not a job
// asked for them: the node price, spot and not, of each cloud of cls
// priced in config.yaml, so that `sortie prices` shows them.
func FixedPriceKeys(cls []Cloud) []price.Key {
	var out []price.Key
	for _, c := range cls {
		if c.Prices != nil && c.PricedInConfig {
			out = append(out, price.Key{Cloud: c.Name}, price.Key{Cloud: c.Name, Spot: true})
		}
	}
	return out
}
