package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/prices"
	"sortie/provision/price"
)

// PriceIntervals are the refresh intervals of config.yaml's prices:.
func (s *Service) PriceIntervals() prices.Intervals {
	return prices.Intervals{OnDemand: s.Config.Prices.OnDemandRefresh.D(), Spot: s.Config.Prices.SpotRefresh.D()}
}

// Prices lists the prices sortie would charge, per node-hour, from the
// store's cache (never a call to a cloud), each with where and when it
// was read and whether it is stale. A cloud priced per resource in
// config.yaml, asked with a type, answers the shape's price from the
// configuration itself.
func (s *Service) Prices(ctx context.Context, req contract.PricesRequest) ([]contract.PriceView, error) {
	req.Cloud = strings.ToLower(strings.TrimSpace(req.Cloud))
	if req.Cloud != "" && clouds.Lookup(req.Cloud).Name == "" {
		return nil, &contract.UsageError{Err: fmt.Errorf("--cloud %q: not a cloud sortie knows; use one of %s", req.Cloud, strings.Join(knownClouds(), ", "))}
	}
	if c := pricedCloud(req.Cloud); c.PricedInConfig && req.Type != "" {
		if _, _, _, err := price.ParseShape(req.Type); err != nil {
			return nil, &contract.UsageError{Err: fmt.Errorf("--type: %w", err)}
		}
		f, err := c.Prices(ctx, s.Config)
		if err != nil {
			return nil, err
		}
		var out []contract.PriceView
		for _, spot := range []bool{false, true} {
			qs, err := f.Prices(ctx, []price.Key{{Cloud: c.Name, InstanceType: req.Type, Spot: spot}})
			if err != nil {
				return nil, err
			}
			for _, q := range qs {
				out = append(out, priceView(q, false))
			}
		}
		return out, nil
	}
	b := prices.NewBook(s.Store, s.PriceIntervals(), s.now)
	if err := b.Load(ctx); err != nil {
		return nil, err
	}
	qs := b.Latest(func(k price.Key) bool {
		return (req.Cloud == "" || k.Cloud == req.Cloud) && (req.Type == "" || k.InstanceType == req.Type) &&
			(req.Region == "" || k.Region == req.Region || k.Region == "")
	})
	out := make([]contract.PriceView, 0, len(qs))
	for _, q := range qs {
		out = append(out, priceView(q, true))
	}
	return out, nil
}

// pricedCloud is the registry's entry of name; the zero Cloud for "".
func pricedCloud(name string) clouds.Cloud {
	if name == "" {
		return clouds.Cloud{}
	}
	return clouds.Lookup(name)
}

func knownClouds() []string {
	var out []string
	for _, c := range clouds.Known() {
		out = append(out, c.Name)
	}
	return out
}

func priceView(q price.Quote, read bool) contract.PriceView {
	v := contract.PriceView{Cloud: q.Cloud, Region: q.Region, Zone: q.Zone, InstanceType: q.InstanceType, Spot: q.Spot,
		PerHour: q.PerHour, Currency: "USD", Source: q.Source, EffectiveAt: q.Effective.UTC(), Stale: q.Stale}
	if read {
		at := q.ReadAt.UTC()
		v.ReadAt = &at
	}
	return v
}

// ErrNoPriceReader is returned by RefreshPrices in a program that cannot
// reach the clouds' pricing APIs.
var ErrNoPriceReader = errors.New("this program reads no prices from the clouds")

// RefreshPrices reads the prices req selects from the clouds now: those
// cached, and, with a cloud, a type and a region (or a cloud priced in
// config.yaml), that type's on-demand and spot prices there. It is
// asked of the controller program (RefreshPricesHook); only an admin of a
// server may, as it calls the clouds' APIs with the server's credentials.
func (s *Service) RefreshPrices(ctx context.Context, req contract.PricesRequest) (*contract.PricesRefreshed, error) {
	if !s.asker().Admin {
		return nil, &contract.AdminError{Verb: "refresh the prices"}
	}
	req.Cloud = strings.ToLower(strings.TrimSpace(req.Cloud))
	if req.Cloud != "" && clouds.Lookup(req.Cloud).Name == "" {
		return nil, &contract.UsageError{Err: fmt.Errorf("--cloud %q: not a cloud sortie knows; use one of %s", req.Cloud, strings.Join(knownClouds(), ", "))}
	}
	if s.RefreshPricesHook == nil {
		return nil, ErrNoPriceReader
	}
	return s.RefreshPricesHook(ctx, req)
}

// PriceRefresh is what a refresh of req reads (prices.Which).
func PriceRefresh(req contract.PricesRequest) prices.Which {
	w := prices.Which{OnDemand: true, Spot: true, Match: func(k price.Key) bool {
		return (req.Cloud == "" || k.Cloud == req.Cloud) && (req.Type == "" || k.InstanceType == req.Type) &&
			(req.Region == "" || k.Region == req.Region || k.Region == "")
	}}
	c := pricedCloud(req.Cloud)
	switch {
	case c.PricedInConfig && req.Type != "":
		w.Extra = []price.Key{{Cloud: c.Name, InstanceType: req.Type}, {Cloud: c.Name, InstanceType: req.Type, Spot: true}}
	case c.Name != "" && !c.PricedInConfig && req.Type != "" && req.Region != "":
		// Spot with no zone: every zone of the region.
		w.Extra = []price.Key{{Cloud: c.Name, Region: req.Region, InstanceType: req.Type}, {Cloud: c.Name, Region: req.Region, InstanceType: req.Type, Spot: true}}
	}
	return w
}

// RefreshedView is the contract's view of a refresh's results.
func RefreshedView(rs []prices.CloudResult) *contract.PricesRefreshed {
	out := &contract.PricesRefreshed{Clouds: []contract.PricesRefreshedCloud{}}
	for _, r := range rs {
		c := contract.PricesRefreshedCloud{Cloud: r.Cloud, Asked: r.Asked, Quotes: r.Quotes}
		if r.Err != nil {
			msg := r.Err.Error()
			c.Error = &msg
		}
		out.Clouds = append(out.Clouds, c)
	}
	return out
}
