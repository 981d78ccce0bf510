package smoke_tests

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/provision/aws/pricingfake"
	"sortie/provision/cloudtest"
)

// `sortie prices refresh` reads AWS's prices (the Price List API's
// stand-in for on-demand, moto's DescribeSpotPriceHistory for spot) into
// the store, and `sortie prices -o json` shows each with its source; a
// price list that cannot be reached fails the refresh and keeps the
// prices read before. Both answers are held to their schemas and to
// golden files (testdata/contract/prices*.json).
func TestContractPrices(t *testing.T) {
	moto := cloudtest.StartMoto(t)
	fake := pricingfake.New()
	effective := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	fake.Add(pricingfake.Product{InstanceType: "m6i.large", RegionCode: "us-east-1", USDPerHour: "0.0960000000", EffectiveDate: effective})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	e := newEnv(t, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_CONFIG_FILE=/dev/null", "AWS_PROFILE=", "AWS_REGION=")
	e.config(fmt.Sprintf(`
aws:
  regions: [us-east-1]
  endpoint: %s
  pricing_endpoint: %s
  retry_max_attempts: 1
kubernetes:
  prices:
    accelerator_hour: {A100: 2.5}
`, moto.URL, srv.URL))

	// Nothing is known before a refresh.
	if out := e.must("prices", "-o", "json").stdout; strings.TrimSpace(out) != "[]" {
		t.Fatalf("prices before any refresh: %s", out)
	}
	refreshed := e.must("prices", "refresh", "--cloud", "aws", "--region", "us-east-1", "--type", "m6i.large", "-o", "json").stdout
	raw := e.must("prices", "--cloud", "aws", "--type", "m6i.large", "-o", "json").stdout
	c := newConformer(loadOpenAPI(t), nil)
	goldens := map[string]any{
		"prices-refresh.json": c.conform("prices refresh", "prices refresh", decodeJSON(t, refreshed), ref("prices_refreshed")),
		"prices.json":         c.conform("prices", "prices", decodeJSON(t, raw), listOf(ref("price"))),
	}
	c.report(t)
	for f, v := range goldens {
		compareGolden(t, filepath.Join("testdata", "contract", f), v)
	}
	if r := e.must("prices", "refresh", "--cloud", "aws", "--region", "us-east-1", "--type", "m6i.large"); !strings.Contains(r.stdout, "aws: ") ||
		!strings.Contains(r.stdout, "prices read") {
		t.Errorf("refresh said: %s %s", r.stdout, r.stderr)
	}
	var ps []contract.PriceView
	if err := json.Unmarshal([]byte(raw), &ps); err != nil {
		t.Fatal(err)
	}
	var onDemand, spot int
	for _, p := range ps {
		if p.Cloud != "aws" || p.Region != "us-east-1" || p.InstanceType != "m6i.large" || p.Stale || p.ReadAt == nil || p.Currency != "USD" {
			t.Errorf("price %+v", p)
		}
		switch {
		case !p.Spot && p.PerHour == 0.096 && p.Source == "aws pricing GetProducts" && p.EffectiveAt.Equal(effective) && p.Zone == "":
			onDemand++
		case p.Spot && p.PerHour == 0.00001 && p.Source == "ec2 DescribeSpotPriceHistory" && strings.HasPrefix(p.Zone, "us-east-1"):
			spot++ // moto's price, in every zone it offers the type
		default:
			t.Errorf("a price from nowhere: %+v", p)
		}
	}
	if onDemand != 1 || spot < 2 {
		t.Errorf("on-demand prices %d (want 1), spot prices %d (want one per zone):\n%s", onDemand, spot, raw)
	}
	table := e.must("prices", "--cloud", "aws").stdout
	if !strings.Contains(table, "$0.096") || !strings.Contains(table, "aws pricing GetProducts") || !strings.Contains(table, "on-demand") {
		t.Errorf("the table:\n%s", table)
	}

	// The price list is down: the refresh fails, saying why, and the
	// prices read before are still shown.
	fake.Fail(100)
	r := e.run("prices", "refresh")
	if r.code != 1 || !strings.Contains(r.stderr, "pricing GetProducts") || !strings.Contains(r.stderr, "the prices read before are kept") {
		t.Errorf("refresh while the price list is down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out := e.must("prices", "--cloud", "aws", "-o", "json").stdout; !strings.Contains(out, `"per_hour": 0.096`) {
		t.Errorf("the on-demand price is gone after a failed refresh:\n%s", out)
	}

	// A cluster's GPUs, priced in config.yaml.
	out := e.must("prices", "--cloud", "kubernetes", "--type", "cpus=8,A100=2", "-o", "json").stdout
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].PerHour != 5 || ps[0].Source != "config.yaml kubernetes.prices" {
		t.Errorf("kubernetes prices: %s", out)
	}
}
