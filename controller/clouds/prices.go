package clouds

import (
	"context"
	"sync"
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
// name. Each is built when it is first asked for prices, not before: a
// cloud with no credentials here costs nothing until a job asks for its
// prices, and then its error says why.
func PriceFetchers(cfg config.Config, cls []Cloud) map[string]price.Fetcher {
	fs := map[string]price.Fetcher{}
	for _, c := range cls {
		if c.Prices != nil {
			fs[c.Name] = &lazyFetcher{build: func(ctx context.Context) (price.Fetcher, error) { return c.Prices(ctx, cfg) }}
		}
	}
	return fs
}

// lazyFetcher builds its fetcher at its first use, and again after a
// failed build.
type lazyFetcher struct {
	build func(context.Context) (price.Fetcher, error)
	mu    sync.Mutex
	f     price.Fetcher
}

func (l *lazyFetcher) Prices(ctx context.Context, keys []price.Key) ([]price.Quote, error) {
	l.mu.Lock()
	f := l.f
	if f == nil {
		var err error
		if f, err = l.build(ctx); err != nil {
			l.mu.Unlock()
			return nil, err
		}
		l.f = f
	}
	l.mu.Unlock()
	return f.Prices(ctx, keys)
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
