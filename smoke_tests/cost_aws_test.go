package smoke_tests

import (
	"context"
	"encoding/xml"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/provision/aws/pricingfake"
	"sortie/provision/cloudtest"
)

// A spot job on AWS (moto) preempted twice recovers on-demand
// (job_recovery.on_demand_after: 2), and what `jobs show -o json` says it
// cost is what a user computes by hand: each attempt's nodes × its price
// (on-demand from the Price List Query API, spot from EC2's spot price
// history) × the seconds from its billed_from to its end, a minute at
// least.
func TestAWSSpotPreemptedTwiceCostsWhatItsPricesSay(t *testing.T) {
	e := newAWSEnv(t)
	// The Price List Query API knows the on-demand price of t3.micro. The
	// price is made up, and high, so that a cent is a second and a half of
	// billing: an attempt billed at the wrong price, for the wrong time or
	// not at all is off by much more than a cent.
	const onDemandPerHour = 24.0
	fake := pricingfake.New()
	fake.Add(pricingfake.Product{InstanceType: "t3.micro", RegionCode: "us-east-1",
		USDPerHour: strconv.FormatFloat(onDemandPerHour, 'f', 10, 64), EffectiveDate: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cfgPath := filepath.Join(e.home, "config.yaml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	e.config(strings.Replace(string(cfg), "aws:\n", "aws:\n  pricing_endpoint: "+srv.URL+"\n", 1))

	dir := t.TempDir()
	f := e.write("task.yaml", `
name: spot-then-on-demand
resources:
  cloud: aws
  region: us-east-1
  instance_type: t3.micro
  use_spot: true
  job_recovery:
    on_demand_after: 2
run: |
  if [ "$SORTIE_ATTEMPT" -lt 3 ]; then touch `+dir+`/attempt-$SORTIE_ATTEMPT; sleep 300; fi
  echo finished
`)
	id := e.launch(f)
	// The cloud takes the spot node away twice, and its processes die
	// with it.
	for n := 1; n <= 2; n++ {
		waitFile(t, filepath.Join(dir, fmt.Sprintf("attempt-%d", n)))
		d := e.waitFor(id, 30*time.Second, fmt.Sprintf("attempt %d running", n), func(d contract.JobDetail) bool {
			return len(d.Attempts) == n && len(d.Attempts[n-1].InstanceIDs) == 1
		})
		inst := d.Attempts[n-1].InstanceIDs[0]
		if err := e.proxy.SpotInterrupt(context.Background(), "us-east-1", inst); err != nil {
			t.Fatal(err)
		}
		cloudtest.KillNodeProcesses(filepath.Join(e.nodes, inst))
	}
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 3 {
		t.Fatalf("attempts: %+v", d.Attempts)
	}

	// What moto's EC2 says each instance was, and the spot prices it
	// answers, read through the EC2 API as sortie reads them.
	spotPerHour := spotPrices(t, e.moto.URL, "t3.micro")
	var want float64
	for i, a := range d.Attempts {
		wantOutcome, wantSpot := "preempted", true
		if i == 2 {
			wantOutcome, wantSpot = "succeeded", false
		}
		if deref(a.Outcome) != wantOutcome || len(a.InstanceIDs) != 1 {
			t.Fatalf("attempt %d: outcome %s on %v, want %s on one instance (%s)", a.Attempt, deref(a.Outcome), a.InstanceIDs, wantOutcome, deref(a.Reason))
		}
		if spot := instanceLifecycle(t, e.moto.URL, a.InstanceIDs[0]) == "spot"; spot != wantSpot {
			t.Errorf("attempt %d ran on %s, spot %v; want spot %v", a.Attempt, a.InstanceIDs[0], spot, wantSpot)
		}
		perHour := onDemandPerHour
		if wantSpot {
			p, ok := spotPerHour[deref(a.Zone)]
			if !ok {
				t.Fatalf("moto has no spot price of t3.micro in %s: %v", deref(a.Zone), spotPerHour)
			}
			perHour = p
		}
		if a.BilledFrom == nil || a.EndedAt == nil {
			t.Fatalf("attempt %d: billed from %v to %v", a.Attempt, a.BilledFrom, a.EndedAt)
		}
		billed := max(a.EndedAt.Sub(*a.BilledFrom), time.Minute)
		nodes := 1
		cost := perHour * float64(nodes) * billed.Seconds() / 3600
		want += cost
		t.Logf("attempt %d: %s in %s, %s at $%g/h billed %s = $%.6f; sortie says price_per_hour %v cost %v (estimate %v): %s",
			a.Attempt, a.InstanceIDs[0], deref(a.Zone), map[bool]string{true: "spot", false: "on-demand"}[wantSpot], perHour, billed, cost,
			fptr(a.PricePerHour), fptr(a.Cost), a.CostEstimate, deref(a.Decision))
		if a.Cost == nil || math.Abs(*a.Cost-cost) > 0.01 || a.CostEstimate {
			t.Errorf("attempt %d cost %v (estimate %v), want $%.4f", a.Attempt, fptr(a.Cost), a.CostEstimate, cost)
		}
		if a.PricePerHour != nil && *a.PricePerHour != perHour {
			t.Errorf("attempt %d price_per_hour %v, want %v", a.Attempt, *a.PricePerHour, perHour)
		}
	}
	if dec := deref(d.Attempts[1].Decision); !strings.Contains(dec, "2 preemptions reach on_demand_after 2: recovering on-demand") {
		t.Errorf("the second preemption's decision %q does not say it recovers on-demand", dec)
	}
	if d.Cost == nil || math.Abs(*d.Cost-want) > 0.01 || d.CostEstimate {
		t.Errorf("job cost %v (estimate %v), want $%.4f", fptr(d.Cost), d.CostEstimate, want)
	}
	e.must("controller", "stop")
	if live := cloudtest.LiveInstances(t, e.moto.URL, "us-east-1"); len(live) != 0 {
		t.Errorf("instances left running: %v", live)
	}
}

func fptr(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// spotPrices is moto's latest Linux spot price of typ in each zone of
// us-east-1, from DescribeSpotPriceHistory.
func spotPrices(t *testing.T, endpoint, typ string) map[string]float64 {
	t.Helper()
	body, err := cloudtest.Call(context.Background(), endpoint, "us-east-1", "DescribeSpotPriceHistory", map[string]string{
		"InstanceType.1": typ, "ProductDescription.1": "Linux/UNIX",
	})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Items []struct {
			Zone        string    `xml:"availabilityZone"`
			Type        string    `xml:"instanceType"`
			Description string    `xml:"productDescription"`
			Price       string    `xml:"spotPrice"`
			At          time.Time `xml:"timestamp"`
		} `xml:"spotPriceHistorySet>item"`
	}
	if err := xml.Unmarshal(body, &out); err != nil {
		t.Fatalf("DescribeSpotPriceHistory: %v\n%s", err, body)
	}
	prices, at := map[string]float64{}, map[string]time.Time{}
	for _, it := range out.Items {
		if it.Type != typ || !strings.HasPrefix(it.Description, "Linux/UNIX") || (!at[it.Zone].IsZero() && !it.At.After(at[it.Zone])) {
			continue
		}
		p, err := strconv.ParseFloat(it.Price, 64)
		if err != nil {
			t.Fatalf("spot price %q: %v", it.Price, err)
		}
		prices[it.Zone], at[it.Zone] = p, it.At
	}
	if len(prices) == 0 {
		t.Fatalf("moto answers no spot price of %s:\n%s", typ, body)
	}
	return prices
}

// instanceLifecycle is what EC2 says of how instance id was bought:
// "spot", or "" for on-demand.
func instanceLifecycle(t *testing.T, endpoint, id string) string {
	t.Helper()
	body, err := cloudtest.Call(context.Background(), endpoint, "us-east-1", "DescribeInstances", map[string]string{"InstanceId.1": id})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Instances []struct {
			ID        string `xml:"instanceId"`
			Lifecycle string `xml:"instanceLifecycle"`
		} `xml:"reservationSet>item>instancesSet>item"`
	}
	if err := xml.Unmarshal(body, &out); err != nil {
		t.Fatalf("DescribeInstances: %v\n%s", err, body)
	}
	if len(out.Instances) != 1 || out.Instances[0].ID != id {
		t.Fatalf("DescribeInstances %s: %+v", id, out.Instances)
	}
	return out.Instances[0].Lifecycle
}
