package gcp

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sortie/provision/gcp/billingfake"
	"sortie/provision/gcp/gcpfake"
	"sortie/provision/price"
)

func TestPricesFromTheBillingCatalog(t *testing.T) {
	ctx := context.Background()
	compute := gcpfake.New(t, gcpfake.Options{})
	// Two SKUs a page: the reader follows nextPageToken.
	catalog := billingfake.New(2)
	eff := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	later := eff.AddDate(0, 1, 0)
	us := []string{"us-central1", "us-east1"}
	catalog.Add(
		// SKUs that are not a predefined VM's price, listed first.
		billingfake.SKU{Description: "N2 Custom Instance Core running in Americas", ResourceGroup: "CPU", UsageType: "OnDemand", Regions: us, UsageUnit: "h", USD: 9, Effective: eff},
		billingfake.SKU{Description: "N2 Sole Tenancy Instance Core running in Americas", ResourceGroup: "CPU", UsageType: "OnDemand", Regions: us, UsageUnit: "h", USD: 9, Effective: eff},
		billingfake.SKU{Description: "N2 Instance Core running in EMEA", ResourceGroup: "CPU", UsageType: "OnDemand", Regions: []string{"europe-west4"}, UsageUnit: "h", USD: 0.034, Effective: eff},
		billingfake.SKU{Description: "N2 Instance Core running in Americas", ResourceGroup: "CPU", UsageType: "OnDemand", Regions: us, UsageUnit: "h", USD: 0.031611, Effective: eff},
		billingfake.SKU{Description: "N2 Instance Ram running in Americas", ResourceGroup: "RAM", UsageType: "OnDemand", Regions: us, UsageUnit: "GiBy.h", USD: 0.004237, Effective: later},
		billingfake.SKU{Description: "Spot Preemptible N2 Instance Core running in Americas", ResourceGroup: "CPU", UsageType: "Preemptible", Regions: us, UsageUnit: "h", USD: 0.0077, Effective: eff},
		billingfake.SKU{Description: "Spot Preemptible N2 Instance Ram running in Americas", ResourceGroup: "RAM", UsageType: "Preemptible", Regions: us, UsageUnit: "GiBy.h", USD: 0.001, Effective: eff},
		billingfake.SKU{Description: "A2 Instance Core running in Americas", ResourceGroup: "CPU", UsageType: "OnDemand", Regions: us, UsageUnit: "h", USD: 0.031611, Effective: eff},
		billingfake.SKU{Description: "A2 Instance Ram running in Americas", ResourceGroup: "RAM", UsageType: "OnDemand", Regions: us, UsageUnit: "GiBy.h", USD: 0.004237, Effective: eff},
		billingfake.SKU{Description: "Nvidia Tesla A100 GPU running in Americas", ResourceGroup: "GPU", UsageType: "OnDemand", Regions: us, UsageUnit: "h", USD: 2.933908, Effective: eff},
	)
	srv := httptest.NewServer(catalog)
	defer srv.Close()
	p, err := NewPrices(ctx, Config{Project: "sortie-test", Endpoint: compute.URL, BillingEndpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	qs, err := p.Prices(ctx, []price.Key{
		{Cloud: "gcp", Region: "us-central1", InstanceType: "n2-standard-8"},
		{Cloud: "gcp", Region: "us-central1", Zone: "us-central1-a", InstanceType: "n2-standard-8", Spot: true},
		{Cloud: "gcp", Region: "us-central1", InstanceType: "a2-highgpu-1g"},
		{Cloud: "gcp", Region: "us-central1", InstanceType: "a2-highgpu-1g", Spot: true}, // no spot A2 SKUs: left out
		{Cloud: "gcp", Region: "us-central1", InstanceType: "e2-micro"},                  // shared core: left out
		{Cloud: "gcp", Region: "us-central1", InstanceType: "n9-standard-2"},             // no such type
		{Cloud: "aws", Region: "us-central1", InstanceType: "n2-standard-8"},
	})
	if err != nil {
		t.Fatal(err)
	}
	mem := func(mb float64) float64 { return mb / 1024 }
	want := []struct {
		key     price.Key
		perHour float64
		eff     time.Time
	}{
		{price.Key{Cloud: "gcp", Region: "us-central1", InstanceType: "n2-standard-8"}, 8*0.031611 + mem(32768)*0.004237, later},
		{price.Key{Cloud: "gcp", Region: "us-central1", InstanceType: "n2-standard-8", Spot: true}, 8*0.0077 + mem(32768)*0.001, eff},
		{price.Key{Cloud: "gcp", Region: "us-central1", InstanceType: "a2-highgpu-1g"}, 12*0.031611 + mem(87040)*0.004237 + 2.933908, eff},
	}
	if len(qs) != len(want) {
		t.Fatalf("quotes %+v, want %d", qs, len(want))
	}
	for i, w := range want {
		q := qs[i]
		if q.Key != w.key || math.Abs(q.PerHour-w.perHour) > 1e-9 || q.Source != SourceCatalog || !q.Effective.Equal(w.eff) {
			t.Errorf("quote %d: %+v, want %+v", i, q, w)
		}
	}
	if catalog.Calls() != 5 {
		t.Errorf("catalog pages read: %d, want 5 (10 SKUs, 2 a page)", catalog.Calls())
	}
}

func TestPricesWhenTheCatalogFails(t *testing.T) {
	ctx := context.Background()
	compute := gcpfake.New(t, gcpfake.Options{})
	catalog := billingfake.New(0)
	catalog.Fail(10)
	srv := httptest.NewServer(catalog)
	defer srv.Close()
	p, err := NewPrices(ctx, Config{Project: "sortie-test", Endpoint: compute.URL, BillingEndpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Prices(ctx, []price.Key{{Cloud: "gcp", Region: "us-central1", InstanceType: "n2-standard-8"}})
	if err == nil || !strings.Contains(err.Error(), "Cloud Billing Catalog services/6F81-5844-456A/skus") {
		t.Errorf("error %v, want one naming the catalog", err)
	}
}
