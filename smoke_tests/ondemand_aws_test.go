package smoke_tests

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/provision/aws/pricingfake"
	"sortie/provision/cloudtest"
)

// A spot job on moto with job_recovery.on_demand_after: 2 is preempted
// twice, recovers on-demand after the second, and succeeds; each attempt's
// cost is its price (moto's spot price, the pricing fake's on-demand one)
// over its billed time with EC2's minute, and the job's is their sum.
func TestAWSSpotPreemptedTwiceGoesOnDemand(t *testing.T) {
	e := newAWSEnv(t)
	fake := pricingfake.New()
	fake.Add(pricingfake.Product{InstanceType: "t3.micro", RegionCode: "us-east-1", USDPerHour: "0.0104000000",
		EffectiveDate: time.Now().Add(-24 * time.Hour)})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cfgPath := filepath.Join(e.home, "config.yaml")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(string(b), "aws:\n", "aws:\n  pricing_endpoint: "+srv.URL+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
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
  touch `+dir+`/started-$SORTIE_ATTEMPT
  if [ "$SORTIE_ATTEMPT" -le 2 ]; then sleep 300; fi
  echo finished
`)
	id := e.launch(f)
	for n := 1; n <= 2; n++ {
		waitFile(t, filepath.Join(dir, "started-"+string(rune('0'+n))))
		d := e.waitStatus(id, "RUNNING")
		a := d.Attempts[len(d.Attempts)-1]
		if err := e.proxy.SpotInterrupt(context.Background(), "us-east-1", a.InstanceIDs[0]); err != nil {
			t.Fatal(err)
		}
		cloudtest.KillNodeProcesses(filepath.Join(e.nodes, a.InstanceIDs[0]))
	}
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 3 {
		t.Fatalf("attempts: %+v", d.Attempts)
	}
	for i, want := range []string{"preempted", "preempted", "succeeded"} {
		if got := deref(d.Attempts[i].Outcome); got != want {
			t.Errorf("attempt %d outcome %s, want %s", i+1, got, want)
		}
	}
	if dec := deref(d.Attempts[1].Decision); !strings.HasSuffix(dec, "2 preemptions reach on_demand_after 2: recovering on-demand") {
		t.Errorf("second attempt's decision %q, want the switch to on-demand", dec)
	}
	// By hand: moto's spot price is $0.00001 an hour, the fake's
	// on-demand price $0.0104; EC2 bills each instance at least a minute.
	prices := []float64{0.00001, 0.00001, 0.0104}
	var sum, want float64
	for i, a := range d.Attempts {
		// The price at launch is null when the controller had not read it
		// yet (it asks the cloud at the first launch that needs it); the
		// cost, counted at the end, has it.
		if (a.PricePerHour != nil && math.Abs(*a.PricePerHour-prices[i]) > 1e-12) || a.Cost == nil {
			t.Fatalf("attempt %d: price %v cost %v, want price %v and a cost", i+1, a.PricePerHour, a.Cost, prices[i])
		}
		if a.EndedAt == nil {
			t.Fatalf("attempt %d has not ended", i+1)
		}
		ran := a.EndedAt.Sub(a.StartedAt)
		lo := prices[i] * time.Minute.Hours()
		hi := prices[i] * max(ran, time.Minute).Hours()
		if *a.Cost < lo-1e-12 || *a.Cost > hi+1e-12 {
			t.Errorf("attempt %d cost %v, want between %v (a minute) and %v (%s)", i+1, *a.Cost, lo, hi, ran)
		}
		if ran < time.Minute {
			want += lo
		} else {
			want = math.NaN()
		}
		sum += *a.Cost
	}
	if d.Cost == nil || math.Abs(*d.Cost-sum) > 1e-12 {
		t.Errorf("job cost %v, want the attempts' sum %v", d.Cost, sum)
	}
	if !math.IsNaN(want) && math.Abs(sum-want) > 1e-12 {
		t.Errorf("cost %v, want %v: two spot minutes at $0.00001 and an on-demand minute at $0.0104", sum, want)
	}
	e.must("controller", "stop")
}
