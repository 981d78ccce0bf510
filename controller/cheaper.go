package controller

import (
	"context"
	"slices"
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

// avoidPreempted orders the spot candidates in zones that preempted
// recently last (config.yaml preemptions:), from the history every replica
// reads from the store. A store that cannot say leaves the order as it
// is: the history is advice, not a reason to stop launching.
func (c *Controller) avoidPreempted(ctx context.Context, cands []strategy.Candidate) []strategy.Candidate {
	halfLife := c.Config.PreemptionHalfLife()
	spot := slices.ContainsFunc(cands, func(c strategy.Candidate) bool { return c.Resources.UseSpot })
	if halfLife <= 0 || !spot {
		return cands
	}
	now := c.Now()
	ps, err := c.Store.Preemptions(ctx, now.Add(-strategy.PreemptionWindow(halfLife)))
	if err != nil {
		c.Log.Warn("read the recent preemptions; launching in the strategy's order", "err", err)
		return cands
	}
	return strategy.AvoidPreempted(cands, strategy.PreemptionWeights(ps, now, halfLife))
}
