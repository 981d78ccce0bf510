package prices

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/store"
	"sortie/provision/price"
	"sortie/strategy/clocktest"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var (
	spotA = price.Key{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.large", Spot: true}
	od    = price.Key{Cloud: "aws", Region: "us-east-1", InstanceType: "m6i.large"}
)

func put(t *testing.T, st *store.Store, k price.Key, perHour float64, effective, readAt time.Time) {
	t.Helper()
	if err := st.PutPrices(context.Background(), []store.Price{{Cloud: k.Cloud, Region: k.Region, Zone: k.Zone, InstanceType: k.InstanceType, Spot: k.Spot,
		PerHour: perHour, Source: "test", Effective: effective, ReadAt: readAt}}); err != nil {
		t.Fatal(err)
	}
}

func perHours(qs []price.Quote) []float64 {
	var out []float64
	for _, q := range qs {
		out = append(out, q.PerHour)
	}
	return out
}

func TestHistory(t *testing.T) {
	st := openStore(t)
	put(t, st, spotA, 0.03, t0, t0)
	put(t, st, spotA, 0.05, t0.Add(time.Hour), t0.Add(time.Hour))
	put(t, st, spotA, 0.04, t0.Add(2*time.Hour), t0.Add(2*time.Hour))
	put(t, st, od, 0.096, t0.Add(-24*time.Hour), t0.Add(2*time.Hour))
	regional := price.Key{Cloud: "gcp", Region: "us-central1", InstanceType: "n2-standard-2", Spot: true}
	put(t, st, regional, 0.02, t0, t0.Add(2*time.Hour))
	cloudWide := price.Key{Cloud: "kubernetes"}
	put(t, st, cloudWide, 1.5, time.Unix(0, 0), t0.Add(2*time.Hour))
	b := NewBook(st, DefaultIntervals(), func() time.Time { return t0.Add(2 * time.Hour) })
	if got := b.History(spotA, t0, t0.Add(time.Hour)); got != nil {
		t.Fatalf("before Load: %v, want nil", got)
	}
	<-b.poke
	b.keys(true)
	if err := b.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := func(k price.Key, from, to time.Duration) []float64 {
		return perHours(b.History(k, t0.Add(from), t0.Add(to)))
	}
	cases := []struct {
		name     string
		key      price.Key
		from, to time.Duration
		want     []float64
	}{
		{"within one price", spotA, 10 * time.Minute, 20 * time.Minute, []float64{0.03}},
		{"across a change", spotA, 30 * time.Minute, 90 * time.Minute, []float64{0.03, 0.05}},
		{"across every change", spotA, 0, 3 * time.Hour, []float64{0.03, 0.05, 0.04}},
		{"from at a change starts at it", spotA, time.Hour, 90 * time.Minute, []float64{0.05}},
		{"a change at the end is not in effect during it", spotA, 30 * time.Minute, time.Hour, []float64{0.03}},
		{"before the first price: the first", spotA, -2 * time.Hour, -time.Hour, []float64{0.03}},
		{"after the last: the last", spotA, 5 * time.Hour, 6 * time.Hour, []float64{0.04}},
		{"on-demand", od, 0, time.Hour, []float64{0.096}},
		{"a zone's spot price from its region's", price.Key{Cloud: "gcp", Region: "us-central1", Zone: "us-central1-a", InstanceType: "n2-standard-2", Spot: true}, 0, time.Hour, []float64{0.02}},
		{"a cloud-wide price", price.Key{Cloud: "kubernetes", Region: "ctx", Zone: "ns"}, 0, time.Hour, []float64{1.5}},
	}
	for _, c := range cases {
		if got := h(c.key, c.from, c.to); !equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// The returned slice cannot grow into the next quote.
	got := b.History(spotA, t0, t0.Add(30*time.Minute))
	if cap(got) != len(got) {
		t.Errorf("History's slice has room to append over the cache: len %d cap %d", len(got), cap(got))
	}
	// A key no cloud was asked for is nil, and wanted once.
	unknown := price.Key{Cloud: "aws", Region: "eu-west-1", InstanceType: "c7g.large"}
	if got := b.History(unknown, t0, t0.Add(time.Hour)); got != nil {
		t.Errorf("unknown key: %v, want nil", got)
	}
	b.History(unknown, t0, t0.Add(time.Hour))
	select {
	case <-b.poke:
	default:
		t.Fatal("an unknown key did not tell the refresher")
	}
	select {
	case <-b.poke:
		t.Fatal("an unknown key asked again told the refresher again")
	default:
	}
	if ks := b.keys(true); len(ks) != 1 || ks[0] != unknown {
		t.Errorf("untried keys: %v, want [%v]", ks, unknown)
	}
	if ks := b.keys(true); len(ks) != 0 {
		t.Errorf("untried keys after asking: %v, want none", ks)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// History allocates nothing: it is asked for every attempt of a queue of
// 100,000 jobs.
func TestHistoryAllocatesNothing(t *testing.T) {
	st := openStore(t)
	put(t, st, spotA, 0.03, t0, t0)
	put(t, st, spotA, 0.05, t0.Add(time.Hour), t0.Add(time.Hour))
	b := NewBook(st, DefaultIntervals(), func() time.Time { return t0 })
	if err := b.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	zone := price.Key{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b", InstanceType: "m6i.large", Spot: true}
	b.History(zone, t0, t0) // wanted once
	if n := testing.AllocsPerRun(100, func() {
		b.History(spotA, t0, t0.Add(2*time.Hour))
		b.History(zone, t0, t0.Add(2*time.Hour))
	}); n != 0 {
		t.Errorf("History allocates %v times a call, want 0", n)
	}
}

func BenchmarkHistory(b *testing.B) {
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "state.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var rows []store.Price
	for i := range 24 {
		rows = append(rows, store.Price{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", InstanceType: "m6i.large", Spot: true,
			PerHour: 0.03 + float64(i)/1000, Source: "test", Effective: t0.Add(time.Duration(i) * time.Hour), ReadAt: t0})
	}
	if err := st.PutPrices(context.Background(), rows); err != nil {
		b.Fatal(err)
	}
	bk := NewBook(st, DefaultIntervals(), func() time.Time { return t0 })
	if err := bk.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		bk.History(spotA, t0.Add(3*time.Hour), t0.Add(5*time.Hour))
	}
}

func TestStale(t *testing.T) {
	st := openStore(t)
	put(t, st, spotA, 0.03, t0, t0)
	put(t, st, spotA, 0.05, t0.Add(time.Hour), t0.Add(time.Hour))
	put(t, st, od, 0.096, t0, t0.Add(time.Hour))
	now := t0.Add(time.Hour)
	b := NewBook(st, DefaultIntervals(), func() time.Time { return now })
	load := func() {
		t.Helper()
		if err := b.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	stale := func(k price.Key) []bool {
		var out []bool
		for _, q := range b.History(k, t0, t0.Add(2*time.Hour)) {
			out = append(out, q.Stale)
		}
		return out
	}
	load()
	if got := stale(spotA); !equal(bools(got), bools([]bool{false, false})) {
		t.Errorf("fresh: %v", got)
	}
	// Five minutes and a minute of grace after the last read, spot is
	// still fresh; a moment later it is stale, the price before it never.
	now = t0.Add(time.Hour + 6*time.Minute)
	load()
	if got := stale(spotA); !equal(bools(got), bools([]bool{false, false})) {
		t.Errorf("at the grace's end: %v", got)
	}
	now = now.Add(time.Second)
	load()
	if got := stale(spotA); !equal(bools(got), bools([]bool{false, true})) {
		t.Errorf("after the grace: %v, want only the price in effect stale", got)
	}
	if got := stale(od); !equal(bools(got), bools([]bool{false})) {
		t.Errorf("on-demand read 6m ago: %v, want fresh", got)
	}
	now = t0.Add(time.Hour + 24*time.Hour + 144*time.Minute + time.Second)
	load()
	if got := stale(od); !equal(bools(got), bools([]bool{true})) {
		t.Errorf("on-demand read a day and 2.4h ago: %v, want stale", got)
	}
}

func bools(bs []bool) []float64 {
	out := make([]float64, len(bs))
	for i, b := range bs {
		if b {
			out[i] = 1
		}
	}
	return out
}

// fetcher answers with prices the test sets, or fails.
type fetcher struct {
	mu     sync.Mutex
	prices map[price.Key]float64
	fail   error
	asked  [][]price.Key
}

func (f *fetcher) Prices(ctx context.Context, keys []price.Key) ([]price.Quote, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, keys)
	if f.fail != nil {
		return nil, f.fail
	}
	var out []price.Quote
	for _, k := range keys {
		if p, ok := f.prices[k]; ok {
			out = append(out, price.Quote{Key: k, PerHour: p, Source: "fake", Effective: t0})
		}
	}
	return out, nil
}

func (f *fetcher) set(k price.Key, p float64, fail error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prices[k], f.fail = p, fail
}

func (f *fetcher) rounds() [][]price.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]price.Key(nil), f.asked...)
}

func TestRefresherRounds(t *testing.T) {
	st := openStore(t)
	clk := clocktest.New(t0)
	f := &fetcher{prices: map[price.Key]float64{spotA: 0.03, od: 0.096}}
	var logs bytes.Buffer
	b := NewBook(st, DefaultIntervals(), clk.Now)
	r := &Refresher{Book: b, Store: st, Fetchers: map[string]price.Fetcher{"aws": f}, Fixed: []price.Key{spotA, od},
		Now: clk.Now, After: clk.After, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// At start: both kinds.
	clk.BlockUntil(t, 1)
	if got := f.rounds(); len(got) != 1 || len(got[0]) != 2 {
		t.Fatalf("first round asked %v, want both keys", got)
	}
	if got := b.History(spotA, t0, t0); len(got) != 1 || got[0].PerHour != 0.03 || got[0].ReadAt != t0 || got[0].Stale {
		t.Fatalf("after the first round: %+v", got)
	}
	// Five minutes on: spot alone, whose new price is recorded.
	f.set(spotA, 0.04, nil)
	clk.Advance(5 * time.Minute)
	clk.BlockUntilAsked(t, 2)
	clk.BlockUntil(t, 1)
	if got := f.rounds(); len(got) != 2 || len(got[1]) != 1 || got[1][0] != spotA {
		t.Fatalf("second round asked %v, want the spot key alone", got)
	}
	if got := b.History(spotA, t0, t0); got[0].PerHour != 0.04 {
		t.Errorf("after the spot round: %+v", got)
	}
	// The API fails: the price is kept, and turns stale once it is older
	// than its interval and grace.
	f.set(spotA, 9, errors.New("connection refused"))
	for i := 3; i <= 4; i++ {
		clk.Advance(5 * time.Minute)
		clk.BlockUntilAsked(t, i)
		clk.BlockUntil(t, 1)
	}
	got := b.History(spotA, t0, t0)
	if len(got) != 1 || got[0].PerHour != 0.04 || !got[0].Stale {
		t.Errorf("after two failed rounds: %+v, want the last price kept, stale", got)
	}
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the failure is not logged: %s", logs.String())
	}
	// A day on: on-demand again, with spot.
	f.set(spotA, 0.05, nil)
	clk.Set(t0.Add(24 * time.Hour))
	clk.BlockUntilAsked(t, 5)
	clk.BlockUntil(t, 1)
	rs := f.rounds()
	if len(rs) != 5 {
		t.Errorf("rounds: %v, want 5 (a missed round is not run twice)", rs)
	}
	if last := rs[len(rs)-1]; len(last) != 2 {
		t.Errorf("the day's round asked %v, want both keys", last)
	}
	if got := b.History(spotA, t0, t0); got[0].PerHour != 0.05 || got[0].Stale {
		t.Errorf("after the API came back: %+v", got)
	}
}

// A key the Book is asked for and does not know is read at once, not at
// the next round.
func TestRefresherFetchesAWantedKey(t *testing.T) {
	st := openStore(t)
	clk := clocktest.New(t0)
	other := price.Key{Cloud: "aws", Region: "eu-west-1", Zone: "eu-west-1b", InstanceType: "c7g.large", Spot: true}
	f := &fetcher{prices: map[price.Key]float64{other: 0.02}}
	b := NewBook(st, DefaultIntervals(), clk.Now)
	r := &Refresher{Book: b, Store: st, Fetchers: map[string]price.Fetcher{"aws": f}, Now: clk.Now, After: clk.After}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	clk.BlockUntil(t, 1)
	if got := b.History(other, t0, t0); got != nil {
		t.Fatalf("before it was read: %v", got)
	}
	clocktest.Eventually(t, "the wanted key is read", func() bool { return len(b.History(other, t0, t0)) == 1 })
	if rs := f.rounds(); len(rs) != 1 || len(rs[0]) != 1 || rs[0][0] != other {
		t.Errorf("asked %v, want the wanted key alone", rs)
	}
}

// A refresh asked for names new keys, and reports each cloud's failure.
func TestRefreshNow(t *testing.T) {
	st := openStore(t)
	f := &fetcher{prices: map[price.Key]float64{od: 0.096}}
	b := NewBook(st, DefaultIntervals(), func() time.Time { return t0 })
	r := &Refresher{Book: b, Store: st, Fetchers: map[string]price.Fetcher{"aws": f, "gcp": &fetcher{fail: errors.New("403 billing API disabled")}}, Now: func() time.Time { return t0 }}
	gcpKey := price.Key{Cloud: "gcp", Region: "us-central1", InstanceType: "n2-standard-2"}
	res := r.Refresh(context.Background(), Which{OnDemand: true, Spot: true, Extra: []price.Key{od, gcpKey, {Cloud: "azure", Region: "eastus"}}})
	if len(res) != 3 || res[0].Cloud != "aws" || res[0].Quotes != 1 || res[0].Err != nil ||
		res[1].Cloud != "azure" || res[1].Err == nil || res[2].Cloud != "gcp" || res[2].Err == nil || !strings.Contains(res[2].Err.Error(), "403") {
		t.Errorf("results: %+v", res)
	}
	if got := b.Latest(nil); len(got) != 1 || got[0].Key != od || got[0].Source != "fake" {
		t.Errorf("latest: %+v", got)
	}
}

// partial answers a key and fails the rest.
type partial struct{}

func (partial) Prices(ctx context.Context, keys []price.Key) ([]price.Quote, error) {
	return []price.Quote{{Key: keys[0], PerHour: 1, Source: "partial", Effective: t0}}, errors.New("the second key: throttled")
}

// What a cloud answered before it failed is recorded, and the failure
// reported.
func TestRefreshRecordsAPartialAnswer(t *testing.T) {
	st := openStore(t)
	b := NewBook(st, DefaultIntervals(), func() time.Time { return t0 })
	r := &Refresher{Book: b, Store: st, Fetchers: map[string]price.Fetcher{"aws": partial{}}, Now: func() time.Time { return t0 }}
	res := r.Refresh(context.Background(), Which{OnDemand: true, Spot: true, Extra: []price.Key{od, spotA}})
	if len(res) != 1 || res[0].Quotes != 1 || res[0].Err == nil {
		t.Errorf("results: %+v", res)
	}
	if got := b.Latest(nil); len(got) != 1 || got[0].Source != "partial" {
		t.Errorf("latest: %+v", got)
	}
}
