package aws

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"sortie/provision/aws/pricingfake"
	"sortie/provision/internal/testenv"
	"sortie/provision/price"
)

func pricesFor(t *testing.T, ec2Endpoint, pricingEndpoint string) *Prices {
	t.Helper()
	p, err := NewPrices(context.Background(), Config{
		Endpoint: ec2Endpoint, PricingEndpoint: pricingEndpoint, Logger: testenv.QuietLogger(), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// On-demand prices come from GetProducts' price list documents, spot
// prices from DescribeSpotPriceHistory (moto's), each with its source and
// the time it took effect.
func TestPricesFromThePriceListAndSpotHistory(t *testing.T) {
	moto := testenv.StartMoto(t)
	fake := pricingfake.New()
	eff := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	fake.Add(
		pricingfake.Product{InstanceType: "m6i.large", RegionCode: "us-east-1", USDPerHour: "0.0960000000", ReservedUSDPerHour: "0.0600000000", EffectiveDate: eff},
		// The same type on Windows, on a dedicated host, and in another
		// region: none is what sortie launches.
		pricingfake.Product{InstanceType: "m6i.large", RegionCode: "us-east-1", OperatingSystem: "Windows", USDPerHour: "0.1880000000", EffectiveDate: eff},
		pricingfake.Product{InstanceType: "m6i.large", RegionCode: "us-east-1", Tenancy: "Dedicated", USDPerHour: "0.1060000000", EffectiveDate: eff},
		pricingfake.Product{InstanceType: "m6i.large", RegionCode: "eu-west-1", USDPerHour: "0.1070000000", EffectiveDate: eff},
	)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	p := pricesFor(t, moto.URL, srv.URL)
	qs, err := p.Prices(testContext(t), []price.Key{
		{Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large"},
		{Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large"}, // asked once
		{Cloud: "aws", Region: "us-east-1", InstanceType: "m7i.large"}, // no price: left out
		{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "t3.micro", Spot: true},
		{Cloud: "gcp", Region: "us-east-1", InstanceType: "m6i.large"}, // not AWS's
	})
	if err != nil {
		t.Fatal(err)
	}
	if fake.Calls() != 2 {
		t.Errorf("GetProducts was called %d times, want 2 (one per region and type)", fake.Calls())
	}
	if len(qs) != 2 {
		t.Fatalf("quotes %+v, want the on-demand price and one zone's spot price", qs)
	}
	od := qs[0]
	if od.Key != (price.Key{Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large"}) || od.PerHour != 0.096 || od.Source != SourceOnDemand || !od.Effective.Equal(eff) {
		t.Errorf("on-demand: %+v", od)
	}
	sp := qs[1]
	// moto answers every spot price with 0.00001 at 2006-01-02T15:04:05.999999999Z.
	if sp.Key != (price.Key{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "t3.micro", Spot: true}) || sp.PerHour != 0.00001 ||
		sp.Source != SourceSpot || sp.Effective.Year() != 2006 {
		t.Errorf("spot: %+v", sp)
	}
	// A spot key with no zone asks for every zone of the region.
	qs, err = p.Prices(testContext(t), []price.Key{{Cloud: "aws", Region: "us-east-1", InstanceType: "t3.micro", Spot: true}})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]bool{}
	for _, q := range qs {
		zones[q.Zone] = true
	}
	if len(zones) < 2 || !zones["us-east-1a"] || !zones["us-east-1b"] {
		t.Errorf("every zone's spot price: %v", zones)
	}
}

// An API that fails is an error naming the call; what the other calls
// read is still answered.
func TestPricesWhenThePriceListFails(t *testing.T) {
	moto := testenv.StartMoto(t)
	fake := pricingfake.New()
	fake.Add(pricingfake.Product{InstanceType: "m6i.large", RegionCode: "us-east-1", USDPerHour: "0.096", EffectiveDate: time.Now()})
	fake.Fail(1)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	p := pricesFor(t, moto.URL, srv.URL)
	qs, err := p.Prices(testContext(t), []price.Key{
		{Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large"},
		{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "t3.micro", Spot: true},
	})
	if err == nil || !strings.Contains(err.Error(), "pricing GetProducts") || !strings.Contains(err.Error(), "m6i.large in us-east-1") {
		t.Errorf("error %v, want one naming the call", err)
	}
	if len(qs) != 1 || !qs[0].Spot {
		t.Errorf("quotes %+v, want the spot price alone", qs)
	}
}

func TestParseOnDemand(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want float64
		ok   bool
		err  string
	}{
		{`{"terms":{"OnDemand":{"A.B":{"effectiveDate":"2026-01-01T00:00:00Z","priceDimensions":{"A.B.C":{"unit":"Hrs","pricePerUnit":{"USD":"0.5"}}}}}}}`, 0.5, true, ""},
		{`{"terms":{"Reserved":{"A.B":{"effectiveDate":"2026-01-01T00:00:00Z","priceDimensions":{"A.B.C":{"unit":"Hrs","pricePerUnit":{"USD":"0.5"}}}}}}}`, 0, false, ""},
		{`{"terms":{"OnDemand":{"A.B":{"effectiveDate":"2026-01-01T00:00:00Z","priceDimensions":{"A.B.C":{"unit":"Quantity","pricePerUnit":{"USD":"100"}}}}}}}`, 0, false, ""},
		{`{"terms":{"OnDemand":{"A.B":{"effectiveDate":"2026-01-01T00:00:00Z","priceDimensions":{"A.B.C":{"unit":"Hrs","pricePerUnit":{"USD":"cheap"}}}}}}}`, 0, false, `"cheap" is not a price in USD`},
		{`{"terms":{"OnDemand":{"A.B":{"effectiveDate":"yesterday","priceDimensions":{"A.B.C":{"unit":"Hrs","pricePerUnit":{"USD":"1"}}}}}}}`, 0, false, `effectiveDate "yesterday"`},
		{`not json`, 0, false, "not the JSON document AWS documents"},
	} {
		got, _, ok, err := parseOnDemand(tc.doc)
		if got != tc.want || ok != tc.ok || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v %v %v, want %v %v %q", tc.doc, got, ok, err, tc.want, tc.ok, tc.err)
		}
	}
}
