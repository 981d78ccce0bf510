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
