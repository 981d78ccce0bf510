package clouds

import (
	"context"
	"errors"
	"math"
	"testing"

	"sortie/controller/config"
	"sortie/provision/price"
)

func TestConfigPrices(t *testing.T) {
	cfg := config.Config{}
	cfg.Kubernetes.Prices = config.ResourcePrices{NodeHour: 0.1, CPUHour: 0.03, MemoryGBHour: 0.004,
		AcceleratorHour: map[string]float64{"A100": 2.5}, Spot: &config.ResourcePrices{AcceleratorHour: map[string]float64{"A100": 1}}}
	fs := PriceFetchers(cfg, Known())
	if fs["kubernetes"] == nil || fs["local"] == nil || fs["sim"] == nil {
		t.Fatalf("fetchers %v", fs)
	}
	shape := price.Shape(4, 16, map[string]int{"A100": 2, "T4": 1})
	keys := []price.Key{
		{Cloud: "kubernetes", Region: "ctx", Zone: "ns", InstanceType: shape},
		{Cloud: "kubernetes", Region: "ctx", InstanceType: shape, Spot: true},
		{Cloud: "kubernetes"},
		{Cloud: "kubernetes", InstanceType: "m6i.large"}, // not a shape: no price
		{Cloud: "aws", InstanceType: shape},              // not this cloud's
	}
	qs, err := fs["kubernetes"].Prices(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		key     price.Key
		perHour float64
		source  string
	}{
		// 0.1 + 4×0.03 + 16×0.004 + 2×2.5 (T4 has no price: 0)
		{price.Key{Cloud: "kubernetes", InstanceType: shape}, 5.284, "config.yaml kubernetes.prices"},
		// spot: its own prices, A100 alone
		{price.Key{Cloud: "kubernetes", InstanceType: shape, Spot: true}, 2, "config.yaml kubernetes.prices.spot"},
		{price.Key{Cloud: "kubernetes"}, 0.1, "config.yaml kubernetes.prices"},
	}
	if len(qs) != len(want) {
		t.Fatalf("quotes %+v, want %d", qs, len(want))
	}
	for i, w := range want {
		if qs[i].Key != w.key || math.Abs(qs[i].PerHour-w.perHour) > 1e-12 || qs[i].Source != w.source || !qs[i].Effective.Equal(configEffective) {
			t.Errorf("quote %d: %+v, want %+v", i, qs[i], w)
		}
	}
	// Zero by default.
	qs, _ = fs["local"].Prices(context.Background(), []price.Key{{Cloud: "local", InstanceType: shape}})
	if len(qs) != 1 || qs[0].PerHour != 0 || qs[0].Source != "config.yaml local.prices" {
		t.Errorf("local by default: %+v", qs)
	}
	if ks := FixedPriceKeys(Known()); len(ks) != 6 {
		t.Errorf("fixed keys: %v, want the node price of local, sim and kubernetes, spot and not", ks)
	}
}

// A cloud's fetcher is built at its first use, and built again after a
// build that failed (credentials added since).
func TestPriceFetchersAreBuiltWhenFirstAsked(t *testing.T) {
	builds := 0
	c := Cloud{Name: "aws", Prices: func(context.Context, config.Config) (price.Fetcher, error) {
		builds++
		if builds == 1 {
			return nil, errors.New("no AWS credentials")
		}
		return ConfigPrices{Cloud: "aws", Key: "test"}, nil
	}}
	f := PriceFetchers(config.Config{}, []Cloud{c})["aws"]
	if builds != 0 {
		t.Fatalf("built %d times before use", builds)
	}
	if _, err := f.Prices(context.Background(), []price.Key{{Cloud: "aws"}}); err == nil || err.Error() != "no AWS credentials" {
		t.Errorf("first use: %v", err)
	}
	for range 2 {
		if qs, err := f.Prices(context.Background(), []price.Key{{Cloud: "aws"}}); err != nil || len(qs) != 1 {
			t.Errorf("after: %v %v", qs, err)
		}
	}
	if builds != 2 {
		t.Errorf("built %d times, want 2", builds)
	}
}
