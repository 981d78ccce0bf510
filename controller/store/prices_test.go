package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPrices(t *testing.T) { onEach(t, testPrices) }

// A price read again at the same effective time replaces the row (a new
// read time, a corrected value); a price from a later effective time adds
// to the key's history; every row comes back by key, oldest first, with
// its times and source as written.
func testPrices(t *testing.T, b backend) {
	ctx := context.Background()
	s, u := openTest(t, b)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	spot := Price{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.large", Spot: true,
		PerHour: 0.0312, Source: "ec2 DescribeSpotPriceHistory", Effective: t0, ReadAt: t0.Add(time.Minute)}
	od := Price{Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large",
		PerHour: 0.096, Source: "aws pricing GetProducts", Effective: t0.Add(-24 * time.Hour), ReadAt: t0}
	if err := s.PutPrices(ctx, []Price{spot, od}); err != nil {
		t.Fatal(err)
	}
	again := spot
	again.ReadAt = t0.Add(6 * time.Minute)
	later := spot
	later.PerHour, later.Effective, later.ReadAt = 0.0351, t0.Add(time.Hour), t0.Add(time.Hour+time.Minute)
	if err := s.PutPrices(ctx, []Price{later, again}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPrices(ctx, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := OpenURL(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Prices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Price{od, again, later}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prices (-want +got):\n%s", diff)
	}
}
