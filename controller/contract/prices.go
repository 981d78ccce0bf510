package contract

import "time"

// PricesRequest selects prices: `sortie prices [--cloud C] [--type T]
// [--region R]`, GET /v1/prices?cloud=C&type=T&region=R. An empty field
// selects every value.
type PricesRequest struct {
	Cloud  string `json:"cloud"`
	Type   string `json:"type"`
	Region string `json:"region"`
}

// PriceView is one price sortie would charge, per node-hour, and where it
// came from: an item of `sortie prices -o json` and of GET /v1/prices.
type PriceView struct {
	Cloud  string `json:"cloud"`
	Region string `json:"region"`
	// Zone is "" for a price that holds in the whole region.
	Zone string `json:"zone"`
	// InstanceType is the cloud's machine name, or for a cloud priced per
	// resource in config.yaml the node's shape (cpus=4,memory=16,A100=1;
	// "" for the node price alone).
	InstanceType string  `json:"instance_type"`
	Spot         bool    `json:"spot"`
	PerHour      float64 `json:"per_hour"`
	Currency     string  `json:"currency"`
	// Source names the API call or config.yaml key the price was read
	// from.
	Source      string    `json:"source"`
	EffectiveAt time.Time `json:"effective_at"`
	// ReadAt is when sortie read it; null for a price computed now from
	// config.yaml.
	ReadAt *time.Time `json:"read_at"`
	// Stale says the price was read longer ago than its refresh interval
	// (the cloud's API could not be reached since): a cost counted with
	// it is an estimate.
	Stale bool `json:"stale"`
}

// PricesRefreshed is what `sortie prices refresh` (POST
// /v1/prices/refresh) read: each cloud asked, how many prices it was
// asked for and answered, and why it failed.
type PricesRefreshed struct {
	Clouds []PricesRefreshedCloud `json:"clouds"`
}

// PricesRefreshedCloud is one cloud's part of a refresh.
type PricesRefreshedCloud struct {
	Cloud  string `json:"cloud"`
	Asked  int    `json:"asked"`
	Quotes int    `json:"quotes"`
	// Error is why the cloud's prices could not all be read; its prices
	// read before are kept. Null when none.
	Error *string `json:"error"`
}
