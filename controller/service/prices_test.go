package service

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sortie/controller/contract"
	"sortie/provision/price"
)

// A cloud priced in config.yaml, asked with a shape, answers its price
// from the configuration, on-demand and spot, with the key it came from.
func TestPricesOfAShapeFromConfig(t *testing.T) {
	s := testService(t)
	s.Config.Kubernetes.Prices.CPUHour = 0.05
	s.Config.Kubernetes.Prices.AcceleratorHour = map[string]float64{"A100": 2}
	ps, err := s.Prices(context.Background(), contract.PricesRequest{Cloud: "Kubernetes", Type: "cpus=4,A100=1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].PerHour != 2.2 || ps[0].Spot || !ps[1].Spot || ps[1].PerHour != 2.2 ||
		ps[0].Source != "config.yaml kubernetes.prices" || ps[0].ReadAt != nil || ps[0].Currency != "USD" {
		t.Errorf("prices: %+v", ps)
	}
	_, err = s.Prices(context.Background(), contract.PricesRequest{Cloud: "kubernetes", Type: "a100"})
	var ue *contract.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--type") {
		t.Errorf("a type that is no shape: %v", err)
	}
	_, err = s.Prices(context.Background(), contract.PricesRequest{Cloud: "azure"})
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `--cloud "azure": not a cloud sortie knows; use one of local, sim, aws, gcp, kubernetes`) {
		t.Errorf("an unknown cloud: %v", err)
	}
}

// Without the controller program's hook, a refresh says it cannot; a user
// who is no admin is refused first.
func TestRefreshPricesNeedsTheControllerProgram(t *testing.T) {
	s := testService(t)
	if _, err := s.RefreshPrices(context.Background(), contract.PricesRequest{}); !errors.Is(err, ErrNoPriceReader) {
		t.Errorf("no hook: %v", err)
	}
	s.Asker = &contract.Asker{Name: "bob"}
	var ae *contract.AdminError
	if _, err := s.RefreshPrices(context.Background(), contract.PricesRequest{}); !errors.As(err, &ae) {
		t.Errorf("bob: %v", err)
	}
}

// A refresh names new keys only when it can: a cloud priced in config
// with a shape, another with a type and a region (every zone's spot
// price); it reads the cached keys it selects.
func TestPriceRefresh(t *testing.T) {
	w := PriceRefresh(contract.PricesRequest{Cloud: "aws", Type: "m6i.large", Region: "us-east-1"})
	want := []price.Key{{Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large"}, {Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large", Spot: true}}
	if len(w.Extra) != 2 || w.Extra[0] != want[0] || w.Extra[1] != want[1] || !w.Spot || !w.OnDemand {
		t.Errorf("aws: %+v", w)
	}
	if w := PriceRefresh(contract.PricesRequest{Cloud: "aws", Type: "m6i.large"}); len(w.Extra) != 0 {
		t.Errorf("aws without a region: %+v", w.Extra)
	}
	if w := PriceRefresh(contract.PricesRequest{Cloud: "sim", Type: "cpus=2"}); len(w.Extra) != 2 || w.Extra[0] != (price.Key{Cloud: "sim", InstanceType: "cpus=2"}) {
		t.Errorf("sim: %+v", w.Extra)
	}
	if w := PriceRefresh(contract.PricesRequest{}); len(w.Extra) != 0 || !w.Match(price.Key{Cloud: "gcp"}) {
		t.Errorf("everything: %+v", w)
	}
	m := PriceRefresh(contract.PricesRequest{Cloud: "aws", Region: "us-east-1"}).Match
	if !m(want[1]) || m(price.Key{Cloud: "aws", Region: "eu-west-1"}) || m(price.Key{Cloud: "gcp", Region: "us-east-1"}) {
		t.Errorf("match by cloud and region")
	}
}
