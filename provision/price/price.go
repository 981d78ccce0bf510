// Package price holds the words sortie uses for money: what a price is the
// price of (Key), a price as read from a cloud's API or config.yaml
// (Quote), and what a cloud's API must answer for sortie to read its prices
// (Fetcher). It holds no price: every number comes from a cloud's own API
// or from config.yaml.
//
// It must not import sortie/controller/... or sortie/strategy, as the rest
// of provision.
package price

import (
	"context"
	"time"
)

// Key names one price: one node of an instance type, in a region (and a
// zone, for spot prices, which clouds set per zone), spot or on-demand.
type Key struct {
	Cloud  string
	Region string
	// Zone is "" for a price that holds in the whole region (on-demand
	// prices, GCP's spot prices).
	Zone string
	// InstanceType is the cloud's name of the machine (m6i.large,
	// n2-standard-8); for clouds priced per resource in config.yaml
	// (local, sim, kubernetes) it is "".
	InstanceType string
	Spot         bool
}

// Quote is one price, in dollars per node-hour, and where it came from.
type Quote struct {
	Key
	PerHour float64
	// Source says where the number came from, for `sortie prices` and
	// `jobs show`: "aws pricing GetProducts", "ec2 DescribeSpotPriceHistory",
	// "config.yaml kubernetes.prices".
	Source string
	// Effective is when the price took effect (a spot price's history
	// timestamp); ReadAt is when sortie read it.
	Effective time.Time
	ReadAt    time.Time
	// Stale is set when the quote is older than its refresh interval
	// because the API could not be reached: a cost counted with it is an
	// estimate.
	Stale bool
}

// Fetcher reads prices from a cloud's API. A key the cloud has no price
// for is left out of the answer, not an error.
type Fetcher interface {
	Prices(ctx context.Context, keys []Key) ([]Quote, error)
}

// Book answers prices from what sortie read before. It never calls a cloud,
// so a decision, a launch or a queue view that asks it waits on no network.
type Book interface {
	// History returns the quotes of key in effect during [from, to], oldest
	// first: the one in effect at from (when one is known) and every change
	// after it, before to. It returns nil when no price of key is known.
	History(key Key, from, to time.Time) []Quote
}

// Amount is a sum of money in dollars, and whether it is an estimate: a
// price in it was stale, was not known for the whole time, or the time is
// not over yet.
type Amount struct {
	Dollars  float64
	Estimate bool
}

// Add sums two amounts; the sum is an estimate when either is.
func (a Amount) Add(b Amount) Amount {
	return Amount{Dollars: a.Dollars + b.Dollars, Estimate: a.Estimate || b.Estimate}
}

// Cost is what nodes instances cost from from to to, billed per second
// with a minimum billed time per instance (a minute on EC2 and Compute
// Engine), at the prices of history (as Book.History returns them: each
// quote holds from its Effective time until the next one's). Time before
// the first quote is charged at the first quote's price and makes the
// amount an estimate, as does a stale quote. No history is zero dollars,
// an estimate.
func Cost(history []Quote, nodes int, from, to time.Time, minimum time.Duration) Amount {
	if len(history) == 0 {
		return Amount{Estimate: true}
	}
	if to.Before(from) {
		to = from
	}
	var a Amount
	if history[0].Effective.After(from) {
		a.Estimate = true
	}
	var seconds float64
	for i, q := range history {
		start, end := q.Effective, to
		if i == 0 || start.Before(from) {
			start = from
		}
		if i+1 < len(history) && history[i+1].Effective.Before(to) {
			end = history[i+1].Effective
		}
		if !end.After(start) {
			continue
		}
		s := end.Sub(start).Seconds()
		seconds += s
		a.Dollars += q.PerHour * s / 3600
		a.Estimate = a.Estimate || q.Stale
	}
	// The minimum is charged at the price the instances started at.
	if short := minimum.Seconds() - to.Sub(from).Seconds(); short > 0 {
		a.Dollars += history[0].PerHour * short / 3600
	}
	a.Dollars *= float64(nodes)
	return a
}
