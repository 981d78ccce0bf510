package controller

import (
	"strings"
	"time"

	"sortie/provision/price"
	"sortie/schema"
	"sortie/strategy"
)

// placeCheaper orders the candidates as resources.placement asks before the
// strategy applies: by price from the Book for "cheapest", as they come
// otherwise.
func (c *Controller) placeCheaper(task *schema.Task, cands []strategy.Candidate, now time.Time) []strategy.Candidate {
	if task.Resources.PlacementOrder != schema.PlaceCheapest {
		return cands
	}
	return strategy.Cheapest(cands, c.priceOf(now))
}

// priceOf prices a candidate per node-hour at now from the Book: a spot
// candidate by its zone's spot price, or its region's where the cloud sets
// spot prices per region; an on-demand one by its region's price.
func (c *Controller) priceOf(now time.Time) strategy.PriceOf {
	return func(cand strategy.Candidate) (float64, bool) {
		if c.Prices == nil {
			return 0, false
		}
		key := candidateKey(cand)
		if key.Zone != "" {
			if q, ok := priceAt(c.Prices, key, now); ok {
				return q.PerHour, true
			}
			key.Zone = ""
		}
		q, ok := priceAt(c.Prices, key, now)
		return q.PerHour, ok
	}
}

// candidateKey is the price key of one node of a candidate: the zone is
// set only for spot, whose prices clouds may set per zone.
func candidateKey(cand strategy.Candidate) price.Key {
	k := price.Key{Cloud: strings.ToLower(cand.Placement.Cloud), Region: cand.Placement.Region,
		InstanceType: cand.Resources.InstanceType, Spot: cand.Resources.UseSpot}
	if k.Spot {
		k.Zone = cand.Placement.Zone
	}
	return k
}

// priceAt is the quote of key in effect at t, as the Book knows it.
func priceAt(b price.Book, key price.Key, t time.Time) (price.Quote, bool) {
	h := b.History(key, t, t)
	if len(h) == 0 {
		return price.Quote{}, false
	}
	return h[len(h)-1], true
}
