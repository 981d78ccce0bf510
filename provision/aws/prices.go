package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"sortie/provision/price"
)

// The sources of AWS prices, as `sortie prices` shows them.
const (
	SourceOnDemand = "aws pricing GetProducts"
	SourceSpot     = "ec2 DescribeSpotPriceHistory"
)

// pricingAPI is the part of the Price List Query API sortie uses.
type pricingAPI interface {
	GetProducts(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// spotAPI is the part of EC2 the spot prices are read with.
type spotAPI interface {
	DescribeSpotPriceHistory(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// Prices reads EC2's prices (price.Fetcher): on-demand prices of Linux
// instances on shared hosts from the Price List Query API (GetProducts),
// spot prices from EC2's DescribeSpotPriceHistory, per zone.
type Prices struct {
	cfg     Config
	pricing pricingAPI
	ec2     func(region string) spotAPI
}

// NewPrices builds the reader of EC2 prices with cfg's credentials and
// endpoints (Home need not be set). It calls nothing.
func NewPrices(ctx context.Context, cfg Config) (*Prices, error) {
	cfg.Home = "-"
	cfg = withDefaults(cfg)
	if cfg.PricingRegion == "" {
		cfg.PricingRegion = "us-east-1"
	}
	awsCfg, err := loadAWSConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pc := pricing.NewFromConfig(awsCfg, func(o *pricing.Options) {
		o.Region = cfg.PricingRegion
		if cfg.PricingEndpoint != "" {
			o.BaseEndpoint = awssdk.String(cfg.PricingEndpoint)
		}
		if cfg.Calls != nil {
			o.APIOptions = append(o.APIOptions, countCalls(cfg.Calls))
		}
	})
	return &Prices{cfg: cfg, pricing: pc, ec2: func(region string) spotAPI {
		return ec2.NewFromConfig(awsCfg, func(o *ec2.Options) {
			o.Region = region
			if cfg.Endpoint != "" {
				o.BaseEndpoint = awssdk.String(cfg.Endpoint)
			}
			if cfg.Calls != nil {
				o.APIOptions = append(o.APIOptions, countCalls(cfg.Calls))
			}
		})
	}}, nil
}

// Prices answers the keys of AWS: an on-demand key with its region's
// price, a spot key with its zone's, or every zone's of the region when
// its Zone is "". It answers what it could read, and the errors of the
// rest.
func (p *Prices) Prices(ctx context.Context, keys []price.Key) ([]price.Quote, error) {
	type regionType struct{ region, typ string }
	var onDemand []regionType
	seen := map[regionType]bool{}
	// spot: region -> instance type -> zones asked ("" for every zone).
	spot := map[string]map[string]map[string]bool{}
	for _, k := range keys {
		if k.Cloud != CloudName || k.Region == "" || k.InstanceType == "" {
			continue
		}
		if !k.Spot {
			rt := regionType{k.Region, k.InstanceType}
			if !seen[rt] {
				seen[rt] = true
				onDemand = append(onDemand, rt)
			}
			continue
		}
		if spot[k.Region] == nil {
			spot[k.Region] = map[string]map[string]bool{}
		}
		if spot[k.Region][k.InstanceType] == nil {
			spot[k.Region][k.InstanceType] = map[string]bool{}
		}
		spot[k.Region][k.InstanceType][k.Zone] = true
	}
	var out []price.Quote
	var errs []error
	for _, rt := range onDemand {
		q, ok, err := p.onDemand(ctx, rt.region, rt.typ)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			out = append(out, q)
		}
	}
	regions := make([]string, 0, len(spot))
	for r := range spot {
		regions = append(regions, r)
	}
	sort.Strings(regions)
	for _, r := range regions {
		qs, err := p.spot(ctx, r, spot[r])
		out = append(out, qs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// onDemand reads the on-demand price of a Linux instance of typ on a
// shared host in region, with no software installed and no capacity
// reservation: what sortie launches.
func (p *Prices) onDemand(ctx context.Context, region, typ string) (price.Quote, bool, error) {
	match := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: awssdk.String(field), Value: awssdk.String(value)}
	}
	in := &pricing.GetProductsInput{
		ServiceCode:   awssdk.String("AmazonEC2"),
		FormatVersion: awssdk.String("aws_v1"),
		Filters: []pricingtypes.Filter{
			match("instanceType", typ), match("regionCode", region), match("operatingSystem", "Linux"),
			match("tenancy", "Shared"), match("preInstalledSw", "NA"), match("capacitystatus", "Used"),
		},
	}
	for {
		out, err := p.pricing.GetProducts(ctx, in)
		if err != nil {
			return price.Quote{}, false, fmt.Errorf("read the on-demand price of %s in %s (pricing GetProducts): %w", typ, region, err)
		}
		for _, doc := range out.PriceList {
			perHour, effective, ok, err := parseOnDemand(doc)
			if err != nil {
				return price.Quote{}, false, fmt.Errorf("read the on-demand price of %s in %s: %w", typ, region, err)
			}
			if ok {
				return price.Quote{Key: price.Key{Cloud: CloudName, Region: region, InstanceType: typ},
					PerHour: perHour, Source: SourceOnDemand, Effective: effective}, true, nil
			}
		}
		if awssdk.ToString(out.NextToken) == "" {
			return price.Quote{}, false, nil
		}
		in.NextToken = out.NextToken
	}
}

// priceListItem is the part of a GetProducts price list item (a JSON
// document) sortie reads: its on-demand terms.
type priceListItem struct {
	Terms struct {
		OnDemand map[string]struct {
			EffectiveDate   string `json:"effectiveDate"`
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// parseOnDemand reads the hourly on-demand price in USD of a price list
// item, and when it took effect; ok is false when the item has none.
func parseOnDemand(doc string) (perHour float64, effective time.Time, ok bool, err error) {
	var item priceListItem
	if err := json.Unmarshal([]byte(doc), &item); err != nil {
		return 0, time.Time{}, false, fmt.Errorf("a price list item is not the JSON document AWS documents: %w", err)
	}
	// Terms and dimensions in name order, so that the answer never
	// depends on a map's order.
	terms := make([]string, 0, len(item.Terms.OnDemand))
	for t := range item.Terms.OnDemand {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	for _, t := range terms {
		term := item.Terms.OnDemand[t]
		dims := make([]string, 0, len(term.PriceDimensions))
		for d := range term.PriceDimensions {
			dims = append(dims, d)
		}
		sort.Strings(dims)
		for _, d := range dims {
			dim := term.PriceDimensions[d]
			usd, has := dim.PricePerUnit["USD"]
			if !has || !strings.EqualFold(dim.Unit, "Hrs") {
				continue
			}
			v, err := strconv.ParseFloat(usd, 64)
			if err != nil || v < 0 {
				return 0, time.Time{}, false, fmt.Errorf("price dimension %s: %q is not a price in USD", d, usd)
			}
			eff, err := time.Parse(time.RFC3339, term.EffectiveDate)
			if err != nil {
				return 0, time.Time{}, false, fmt.Errorf("term %s: effectiveDate %q is not an RFC 3339 time", t, term.EffectiveDate)
			}
			return v, eff, true, nil
		}
	}
	return 0, time.Time{}, false, nil
}

// spot reads the spot prices in effect now in region of each instance
// type of types, in the zones asked ("" for every zone).
func (p *Prices) spot(ctx context.Context, region string, types map[string]map[string]bool) ([]price.Quote, error) {
	names := make([]string, 0, len(types))
	for t := range types {
		names = append(names, t)
	}
	sort.Strings(names)
	now := time.Now()
	if p.cfg.Now != nil {
		now = p.cfg.Now()
	}
	// With StartTime now, EC2 answers the price in effect now of each
	// zone and type (the last change before it, with its time).
	in := &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       toInstanceTypes(names),
		ProductDescriptions: []string{"Linux/UNIX"},
		StartTime:           awssdk.Time(now),
		EndTime:             awssdk.Time(now),
	}
	type zoneType struct{ zone, typ string }
	latest := map[zoneType]price.Quote{}
	client := p.ec2(region)
	for {
		out, err := client.DescribeSpotPriceHistory(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read the spot prices of %s in %s (ec2 DescribeSpotPriceHistory): %w", strings.Join(names, ", "), region, err)
		}
		for _, h := range out.SpotPriceHistory {
			zone, typ := awssdk.ToString(h.AvailabilityZone), string(h.InstanceType)
			zones := types[typ]
			if zones == nil || (!zones[""] && !zones[zone]) || !strings.HasPrefix(string(h.ProductDescription), "Linux/UNIX") {
				continue
			}
			v, err := strconv.ParseFloat(awssdk.ToString(h.SpotPrice), 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("spot price of %s in %s: %q is not a price", typ, zone, awssdk.ToString(h.SpotPrice))
			}
			at := awssdk.ToTime(h.Timestamp)
			zt := zoneType{zone, typ}
			if q, ok := latest[zt]; ok && !at.After(q.Effective) {
				continue
			}
			latest[zt] = price.Quote{Key: price.Key{Cloud: CloudName, Region: region, Zone: zone, InstanceType: typ, Spot: true},
				PerHour: v, Source: SourceSpot, Effective: at}
		}
		if awssdk.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	out := make([]price.Quote, 0, len(latest))
	for _, q := range latest {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].InstanceType != out[j].InstanceType {
			return out[i].InstanceType < out[j].InstanceType
		}
		return out[i].Zone < out[j].Zone
	})
	return out, nil
}

func toInstanceTypes(names []string) []ec2types.InstanceType {
	out := make([]ec2types.InstanceType, len(names))
	for i, n := range names {
		out[i] = ec2types.InstanceType(n)
	}
	return out
}
