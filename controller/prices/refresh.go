package prices

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"sortie/controller/store"
	"sortie/provision/price"
)

// Refresher reads prices from the clouds into the store and the Book: at
// start, then spot prices every Intervals.Spot and on-demand prices every
// Intervals.OnDemand, and at once a key the Book was asked for and did
// not know. A cloud that cannot be reached is logged and its prices kept;
// they turn stale in the Book when they are older than their interval.
type Refresher struct {
	Book  *Book
	Store *store.Store
	// Fetchers read each cloud's prices, by the cloud's name. A key of a
	// cloud with none is not asked for.
	Fetchers map[string]price.Fetcher
	// Fixed are keys asked for at every refresh of their kind, whether
	// or not anyone asked (config.yaml's node prices).
	Fixed []price.Key
	Now   func() time.Time
	// After is the clock's timer (time.After); tests move a clock.
	After func(time.Duration) <-chan time.Time
	Log   *slog.Logger
}

// CloudResult is what one cloud answered in a refresh.
type CloudResult struct {
	Cloud string
	// Asked is how many keys the cloud was asked for; Quotes how many
	// prices it answered.
	Asked, Quotes int
	// Err is why the cloud's prices could not be read; its prices are
	// kept as they were.
	Err error
}

// Which selects what a refresh reads.
type Which struct {
	OnDemand, Spot bool
	// Match, when set, selects the keys to read among those known.
	Match func(price.Key) bool
	// Extra are keys to read besides those known (`sortie prices refresh
	// --cloud aws --region us-east-1 --type m6i.large`).
	Extra []price.Key
	// untried reads only the keys the Book was asked for and has not
	// asked the clouds for yet.
	untried bool
}

// Run refreshes every price at once, then each kind at its interval, until
// ctx ends.
func (r *Refresher) Run(ctx context.Context) {
	log := r.log()
	if err := r.Book.Load(ctx); err != nil {
		log.Warn("read the price cache", "err", err)
	}
	r.Refresh(ctx, Which{OnDemand: true, Spot: true})
	now := r.Now()
	nextSpot, nextOnDemand := now.Add(r.Book.iv.Spot), now.Add(r.Book.iv.OnDemand)
	for {
		next := nextSpot
		if nextOnDemand.Before(next) {
			next = nextOnDemand
		}
		wait := next.Sub(r.Now())
		select {
		case <-ctx.Done():
			return
		case <-r.Book.poke:
			r.Refresh(ctx, Which{OnDemand: true, Spot: true, untried: true})
			continue
		case <-r.After(max(wait, 0)):
		}
		now := r.Now()
		w := Which{Spot: !now.Before(nextSpot), OnDemand: !now.Before(nextOnDemand)}
		if !w.Spot && !w.OnDemand {
			continue
		}
		r.Refresh(ctx, w)
		// The next round is an interval after this one was due, or
		// after now when rounds were missed (the machine slept).
		if w.Spot {
			nextSpot = nextRound(nextSpot, now, r.Book.iv.Spot)
		}
		if w.OnDemand {
			nextOnDemand = nextRound(nextOnDemand, now, r.Book.iv.OnDemand)
		}
	}
}

// nextRound is when the round after the one due at due, run at now, is.
func nextRound(due, now time.Time, every time.Duration) time.Time {
	if next := due.Add(every); next.After(now) {
		return next
	}
	return now.Add(every)
}

func (r *Refresher) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Refresh reads the prices w selects from their clouds, records what they
// answer and reloads the Book. Each cloud's failure is in its result (and
// logged); the prices it had are kept.
func (r *Refresher) Refresh(ctx context.Context, w Which) []CloudResult {
	log := r.log()
	var keys []price.Key
	if w.untried {
		keys = r.Book.keys(true)
	} else {
		for _, k := range append(r.Book.keys(false), r.Fixed...) {
			if w.Match == nil || w.Match(k) {
				keys = append(keys, k)
			}
		}
		keys = append(keys, w.Extra...)
	}
	byCloud := map[string][]price.Key{}
	seen := map[price.Key]bool{}
	for _, k := range keys {
		if seen[k] || (k.Spot && !w.Spot) || (!k.Spot && !w.OnDemand) {
			continue
		}
		seen[k] = true
		byCloud[k.Cloud] = append(byCloud[k.Cloud], k)
	}
	clouds := make([]string, 0, len(byCloud))
	for c := range byCloud {
		clouds = append(clouds, c)
	}
	sort.Strings(clouds)
	var results []CloudResult
	var rows []store.Price
	for _, c := range clouds {
		ks := byCloud[c]
		sort.Slice(ks, func(i, j int) bool { return keyLess(ks[i], ks[j]) })
		res := CloudResult{Cloud: c, Asked: len(ks)}
		f := r.Fetchers[c]
		if f == nil {
			res.Err = fmt.Errorf("sortie reads no prices of %s here", c)
			results = append(results, res)
			continue
		}
		// What a cloud answered is recorded even when it could not
		// answer every key.
		qs, err := f.Prices(ctx, ks)
		if err != nil {
			res.Err = err
			log.Warn("read prices; the cached ones are kept", "cloud", c, "keys", len(ks), "answered", len(qs), "err", err)
		}
		readAt := r.Now()
		for _, q := range qs {
			if q.ReadAt.IsZero() {
				q.ReadAt = readAt
			}
			rows = append(rows, store.Price{Cloud: q.Cloud, Region: q.Region, Zone: q.Zone, InstanceType: q.InstanceType, Spot: q.Spot,
				PerHour: q.PerHour, Source: q.Source, Effective: q.Effective, ReadAt: q.ReadAt})
		}
		res.Quotes = len(qs)
		results = append(results, res)
	}
	if err := r.Store.PutPrices(ctx, rows); err != nil {
		log.Warn("record prices", "err", err)
		for i := range results {
			if results[i].Err == nil && results[i].Quotes > 0 {
				results[i].Err = err
			}
		}
	}
	// Reloaded even when nothing was read: the prices not read again may
	// have turned stale.
	if err := r.Book.Load(ctx); err != nil {
		log.Warn("read the price cache", "err", err)
	}
	return slices.Clip(results)
}
