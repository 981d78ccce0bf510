package config

import (
	"strings"
	"testing"
	"time"
)

func TestPricesDefaultsAndValues(t *testing.T) {
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Prices.OnDemandRefresh.D() != 24*time.Hour || cfg.Prices.SpotRefresh.D() != 5*time.Minute {
		t.Errorf("default intervals: %+v", cfg.Prices)
	}
	if p := cfg.Kubernetes.Prices; p.NodeHour != 0 || p.CPUHour != 0 || len(p.AcceleratorHour) != 0 || p.Spot != nil {
		t.Errorf("kubernetes prices by default: %+v, want zero", p)
	}
	cfg, err = load(t, `prices:
  on_demand_refresh: 12h
  spot_refresh: 2m
kubernetes:
  prices:
    node_hour: 0.1
    cpu_hour: 0.03
    memory_gb_hour: 0.004
    accelerator_hour: {A100: 2.5, T4: 0.35}
    spot:
      accelerator_hour: {A100: 1.1}
local:
  prices: {node_hour: 0.01}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Kubernetes.Prices
	if cfg.Prices.OnDemandRefresh.D() != 12*time.Hour || cfg.Prices.SpotRefresh.D() != 2*time.Minute ||
		k.NodeHour != 0.1 || k.CPUHour != 0.03 || k.MemoryGBHour != 0.004 || k.AcceleratorHour["A100"] != 2.5 || k.AcceleratorHour["T4"] != 0.35 ||
		k.Spot == nil || k.Spot.AcceleratorHour["A100"] != 1.1 || cfg.Local.Prices.NodeHour != 0.01 {
		t.Errorf("read %+v %+v %+v", cfg.Prices, k, cfg.Local.Prices)
	}
}

func TestPricesErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"prices:\n  spot_refresh: 1s\n", "line 2: prices.spot_refresh: 1s is out of range; give a duration from 10s to 24h, or leave it out for 5m"},
		{"prices:\n  on_demand_refresh: 90d\n", "line 2: prices.on_demand_refresh: 2160h0m0s is out of range"},
		{"kubernetes:\n  prices:\n    cpu_hour: -1\n", "line 3: kubernetes.prices.cpu_hour: -1 is not a price; give dollars per hour from 0 to 1000000"},
		{"sim:\n  prices:\n    accelerator_hour: {A100: .nan}\n", `sim.prices.accelerator_hour.A100: ".nan" is not a number`},
		{"sim:\n  prices:\n    accelerator_hour:\n      A100: -2\n", "line 4: sim.prices.accelerator_hour.A100: -2 is not a price"},
		{"local:\n  prices:\n    spot: {spot: {node_hour: 1}}\n", "local.prices.spot.spot: spot prices have no spot prices of their own; remove it"},
		{"local:\n  prices:\n    node_hour: cheap\n", "local.prices.node_hour"},
		{"local:\n  prices:\n    gpu_hour: 1\n", "local.prices.gpu_hour: unknown field"},
	} {
		_, err := load(t, tc.yaml, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
