package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"sortie/controller/api"
	"sortie/controller/contract"
	"sortie/controller/store"
)

// Every user sees the prices and where they came from; only an admin
// refreshes them, through the controller's refresher.
func TestPricesThroughAServer(t *testing.T) {
	ctx := context.Background()
	alice, _, svc := serve(t, nil)
	now := time.Now().UTC().Truncate(time.Second)
	if err := svc.Store.PutPrices(ctx, []store.Price{
		{Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large", PerHour: 0.096, Source: "aws pricing GetProducts", Effective: now.Add(-time.Hour), ReadAt: now},
		{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.large", Spot: true, PerHour: 0.03, Source: "ec2 DescribeSpotPriceHistory",
			Effective: now.Add(-time.Hour), ReadAt: now.Add(-time.Hour)},
		{Cloud: "aws", Region: "eu-west-1", InstanceType: "m6i.large", PerHour: 0.107, Source: "aws pricing GetProducts", Effective: now, ReadAt: now},
	}); err != nil {
		t.Fatal(err)
	}
	ps, err := alice.Prices(ctx, contract.PricesRequest{Cloud: "aws", Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].PerHour != 0.096 || ps[0].Stale || ps[0].ReadAt == nil || !ps[0].ReadAt.Equal(now) ||
		ps[1].Zone != "us-east-1a" || !ps[1].Spot || !ps[1].Stale || ps[1].Source != "ec2 DescribeSpotPriceHistory" {
		t.Fatalf("prices: %+v", ps)
	}
	if _, err := alice.Prices(ctx, contract.PricesRequest{Cloud: "azure"}); err == nil {
		t.Errorf("an unknown cloud: no error")
	}
	var asked contract.PricesRequest
	svc.RefreshPricesHook = func(_ context.Context, req contract.PricesRequest) (*contract.PricesRefreshed, error) {
		asked = req
		msg := "throttled"
		return &contract.PricesRefreshed{Clouds: []contract.PricesRefreshedCloud{{Cloud: "aws", Asked: 2, Quotes: 1, Error: &msg}}}, nil
	}
	_, err = alice.RefreshPrices(ctx, contract.PricesRequest{Cloud: "aws"})
	if ae := (*contract.AdminError)(nil); !errors.As(err, &ae) {
		t.Fatalf("alice's refresh: %v, want it refused as an admin's", err)
	}
	tok, hash, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Store.AddUser(ctx, "root", hash, true); err != nil {
		t.Fatal(err)
	}
	root := New(alice.URL, tok, func(string) string { return "" })
	r, err := root.RefreshPrices(ctx, contract.PricesRequest{Cloud: "aws", Type: "m6i.large", Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if asked != (contract.PricesRequest{Cloud: "aws", Type: "m6i.large", Region: "us-east-1"}) || len(r.Clouds) != 1 || r.Clouds[0].Error == nil || *r.Clouds[0].Error != "throttled" {
		t.Errorf("refresh asked %+v, answered %+v", asked, r)
	}
}
