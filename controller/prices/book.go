// Package prices keeps the prices sortie charges: a Book that answers
// price.Book from a snapshot of the store's price cache, and a Refresher
// that reads the clouds' prices in the background (on-demand lists once a
// day, spot prices every few minutes) into the store and the Book.
//
// A Book's History never waits on the network or the store: it reads an
// immutable snapshot, replaced as a whole after each refresh. A key the
// clouds have not been asked for yet is noted and fetched at once in the
// background; History answers nil for it until then.
//
// It must not import sortie/controller, controller/service or a cloud SDK:
// the service reads the cache through it in the CLI, which links none, and
// the fetchers that call the clouds are handed to the Refresher.
package prices

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"sortie/controller/store"
	"sortie/provision/price"
)

// Intervals are how often each kind of price is read again: on-demand
// lists change seldom, spot prices often.
type Intervals struct {
	OnDemand time.Duration
	Spot     time.Duration
}

// DefaultIntervals are config.yaml's prices.on_demand_refresh and
// prices.spot_refresh when they are left out.
func DefaultIntervals() Intervals {
	return Intervals{OnDemand: 24 * time.Hour, Spot: 5 * time.Minute}
}

// of is the interval of the key's kind.
func (iv Intervals) of(k price.Key) time.Duration {
	if k.Spot {
		return iv.Spot
	}
	return iv.OnDemand
}

// StaleAfter is how old a key's last read may be before its price is
// stale: its refresh interval, and a tenth of it (at least a minute) for
// the refresh itself to run, so that a price does not turn stale while it
// is being read again.
func (iv Intervals) StaleAfter(k price.Key) time.Duration {
	d := iv.of(k)
	return d + max(d/10, time.Minute)
}

// Book answers prices from the store's cache, loaded into memory.
type Book struct {
	st  *store.Store
	iv  Intervals
	now func() time.Time
	// snap is the prices of the last Load; nil before the first.
	snap atomic.Pointer[snapshot]
	// wanted are keys History was asked for and knew no price of: the
	// Refresher asks their clouds for them. Each maps to whether it has
	// been asked for. A map under a lock, not a sync.Map: looking a key
	// up in a sync.Map boxes it, an allocation per call of History.
	wmu    sync.RWMutex
	wanted map[price.Key]bool
	// poke tells the Refresher that a key was wanted for the first time.
	poke chan struct{}
}

// snapshot is one Load's prices: each key's history, oldest first, the
// last quote marked Stale when it was read too long ago.
type snapshot struct {
	byKey map[price.Key][]price.Quote
	// keys are byKey's keys, sorted.
	keys []price.Key
}

// NewBook is a Book over st's price cache, empty until Load. now is the
// clock Load judges staleness with; nil is time.Now.
func NewBook(st *store.Store, iv Intervals, now func() time.Time) *Book {
	if now == nil {
		now = time.Now
	}
	if iv.OnDemand <= 0 {
		iv.OnDemand = DefaultIntervals().OnDemand
	}
	if iv.Spot <= 0 {
		iv.Spot = DefaultIntervals().Spot
	}
	return &Book{st: st, iv: iv, now: now, poke: make(chan struct{}, 1), wanted: map[price.Key]bool{}}
}

// Load reads the store's prices and replaces the snapshot History answers
// from. A failed read keeps the snapshot there was.
func (b *Book) Load(ctx context.Context) error {
	rows, err := b.st.Prices(ctx)
	if err != nil {
		return err
	}
	now := b.now()
	s := &snapshot{byKey: make(map[price.Key][]price.Quote)}
	// The rows come by key, each key's oldest first: one slice holds them
	// all, each key's history a part of it.
	all := make([]price.Quote, len(rows))
	start := 0
	for i, r := range rows {
		k := price.Key{Cloud: r.Cloud, Region: r.Region, Zone: r.Zone, InstanceType: r.InstanceType, Spot: r.Spot}
		all[i] = price.Quote{Key: k, PerHour: r.PerHour, Source: r.Source, Effective: r.Effective, ReadAt: r.ReadAt}
		if i+1 < len(rows) && rowKey(rows[i+1]) == k {
			continue
		}
		h := all[start : i+1 : i+1]
		last := &h[len(h)-1]
		last.Stale = now.Sub(last.ReadAt) > b.iv.StaleAfter(k)
		s.byKey[k] = h
		s.keys = append(s.keys, k)
		start = i + 1
	}
	sort.Slice(s.keys, func(i, j int) bool { return keyLess(s.keys[i], s.keys[j]) })
	b.snap.Store(s)
	return nil
}

func rowKey(r store.Price) price.Key {
	return price.Key{Cloud: r.Cloud, Region: r.Region, Zone: r.Zone, InstanceType: r.InstanceType, Spot: r.Spot}
}

func keyLess(a, b price.Key) bool {
	switch {
	case a.Cloud != b.Cloud:
		return a.Cloud < b.Cloud
	case a.Region != b.Region:
		return a.Region < b.Region
	case a.InstanceType != b.InstanceType:
		return a.InstanceType < b.InstanceType
	case a.Spot != b.Spot:
		return !a.Spot
	}
	return a.Zone < b.Zone
}

// lookup finds key's history: its own, else its region's (a price that
// holds in every zone of the region, as GCP's spot prices and on-demand
// prices do), else its cloud's (a price config.yaml sets for every region).
func (s *snapshot) lookup(key price.Key) []price.Quote {
	if h, ok := s.byKey[key]; ok {
		return h
	}
	if key.Zone != "" {
		key.Zone = ""
		if h, ok := s.byKey[key]; ok {
			return h
		}
	}
	if key.Region != "" {
		key.Region = ""
		if h, ok := s.byKey[key]; ok {
			return h
		}
	}
	return nil
}

// History returns the quotes of key in effect during [from, to], oldest
// first (price.Book). The slice is shared with every other caller: it
// must not be changed. A key with no known price is fetched in the
// background, and History answers nil until it is.
func (b *Book) History(key price.Key, from, to time.Time) []price.Quote {
	s := b.snap.Load()
	var h []price.Quote
	if s != nil {
		h = s.lookup(key)
	}
	if h == nil {
		b.want(key)
		return nil
	}
	// i: the last quote in effect at from (the first when none is).
	lo, hi := 0, len(h)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if h[m].Effective.After(from) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	i := max(lo-1, 0)
	// j: the first quote that takes effect at or after to.
	lo, hi = i+1, len(h)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !h[m].Effective.Before(to) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return h[i:lo:lo]
}

// want notes key for the Refresher, and tells it when the key is new.
func (b *Book) want(key price.Key) {
	b.wmu.RLock()
	_, ok := b.wanted[key]
	b.wmu.RUnlock()
	if ok {
		return
	}
	b.wmu.Lock()
	_, ok = b.wanted[key]
	if !ok {
		b.wanted[key] = false
	}
	b.wmu.Unlock()
	if !ok {
		select {
		case b.poke <- struct{}{}:
		default:
		}
	}
}

// Latest returns the price in effect now of every key match accepts (all
// when nil), in key order.
func (b *Book) Latest(match func(price.Key) bool) []price.Quote {
	s := b.snap.Load()
	if s == nil {
		return nil
	}
	var out []price.Quote
	for _, k := range s.keys {
		if match == nil || match(k) {
			h := s.byKey[k]
			out = append(out, h[len(h)-1])
		}
	}
	return out
}

// keys returns the keys of the snapshot and the wanted keys; with
// untried, only the wanted keys not asked for yet, which it marks asked.
func (b *Book) keys(untried bool) []price.Key {
	var out []price.Key
	if s := b.snap.Load(); s != nil && !untried {
		out = append(out, s.keys...)
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	for k, tried := range b.wanted {
		if !untried || !tried {
			out = append(out, k)
			b.wanted[k] = true
		}
	}
	return out
}
