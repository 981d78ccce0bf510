// Package pricingfake is a stand-in for the AWS Price List Query API
// (service code AmazonEC2) for tests: it answers GetProducts over the AWS
// JSON 1.1 protocol, as the API does, with the products and prices a test
// adds, each price list item the JSON document the API documents
// (product, serviceCode, terms.OnDemand and terms.Reserved, each term's
// priceDimensions with pricePerUnit in USD). It knows no price of its own.
package pricingfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Product is one EC2 product: an instance type in a region, with the
// attributes GetProducts filters on, and its on-demand price.
type Product struct {
	SKU          string
	InstanceType string
	RegionCode   string
	// OperatingSystem, Tenancy, PreInstalledSw and CapacityStatus are
	// the attributes a Linux, shared, plain on-demand instance has:
	// Linux, Shared, NA, Used (the zero value of each is that).
	OperatingSystem, Tenancy, PreInstalledSw, CapacityStatus string
	// USDPerHour is the on-demand price, as the API writes it
	// ("0.0960000000").
	USDPerHour string
	// ReservedUSDPerHour, when set, adds a one-year reserved term at
	// that price, which is not the on-demand price.
	ReservedUSDPerHour string
	// EffectiveDate is when the on-demand term took effect.
	EffectiveDate time.Time
}

// Fake is the API. Its zero value is not usable: see New.
type Fake struct {
	mu       sync.Mutex
	products []Product
	calls    int
	fail     int
}

// New is an API with no products.
func New() *Fake { return &Fake{} }

// Add adds products, filling the attributes left empty.
func (f *Fake) Add(ps ...Product) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range ps {
		if p.OperatingSystem == "" {
			p.OperatingSystem = "Linux"
		}
		if p.Tenancy == "" {
			p.Tenancy = "Shared"
		}
		if p.PreInstalledSw == "" {
			p.PreInstalledSw = "NA"
		}
		if p.CapacityStatus == "" {
			p.CapacityStatus = "Used"
		}
		if p.SKU == "" {
			p.SKU = fmt.Sprintf("SKU%04d", len(f.products)+1)
		}
		f.products = append(f.products, p)
	}
}

// Fail makes the next n calls fail with an internal error, as the API
// does when it is down.
func (f *Fake) Fail(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// Calls is how many GetProducts calls were answered.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type filter struct {
	Type, Field, Value string
}

type request struct {
	ServiceCode string
	Filters     []filter
	MaxResults  int
	NextToken   string
}

// ServeHTTP answers the AWS JSON 1.1 protocol: POST /, the operation in
// X-Amz-Target.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if target := r.Header.Get("X-Amz-Target"); target != "AWSPriceListService.GetProducts" {
		writeError(w, http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("the fake answers GetProducts alone, not %q", target))
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidParameterException", "the body is not JSON: "+err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		writeError(w, http.StatusInternalServerError, "InternalErrorException", "the fake was told to fail")
		return
	}
	f.calls++
	if req.ServiceCode != "AmazonEC2" {
		writeError(w, http.StatusBadRequest, "InvalidParameterException", fmt.Sprintf("the fake has products of AmazonEC2 alone, not %q", req.ServiceCode))
		return
	}
	var match []Product
	for _, p := range f.products {
		if matches(p, req.Filters) {
			match = append(match, p)
		}
	}
	start := 0
	if req.NextToken != "" {
		n, err := strconv.Atoi(req.NextToken)
		if err != nil || n < 0 || n > len(match) {
			writeError(w, http.StatusBadRequest, "InvalidNextTokenException", "bad NextToken")
			return
		}
		start = n
	}
	size := req.MaxResults
	if size <= 0 || size > 100 {
		size = 100
	}
	end := min(start+size, len(match))
	out := struct {
		FormatVersion string
		NextToken     string `json:",omitempty"`
		PriceList     []string
	}{FormatVersion: "aws_v1", PriceList: []string{}}
	for _, p := range match[start:end] {
		out.PriceList = append(out.PriceList, document(p))
	}
	if end < len(match) {
		out.NextToken = strconv.Itoa(end)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(out)
}

func matches(p Product, fs []filter) bool {
	for _, f := range fs {
		if f.Type != "TERM_MATCH" {
			return false
		}
		var v string
		switch f.Field {
		case "ServiceCode":
			v = "AmazonEC2"
		case "instanceType":
			v = p.InstanceType
		case "regionCode":
			v = p.RegionCode
		case "operatingSystem":
			v = p.OperatingSystem
		case "tenancy":
			v = p.Tenancy
		case "preInstalledSw":
			v = p.PreInstalledSw
		case "capacitystatus":
			v = p.CapacityStatus
		default:
			return false
		}
		if v != f.Value {
			return false
		}
	}
	return true
}

// document is p's price list item, as the API documents it: a JSON
// document in a string.
func document(p Product) string {
	const onDemandTerm, reservedTerm, hourly = "JRTCKXETXF", "4NA7Y494T4", "6YS6EN2CT7"
	eff := p.EffectiveDate.UTC().Format(time.RFC3339)
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": "Compute Instance",
			"sku":           p.SKU,
			"attributes": map[string]string{
				"servicecode": "AmazonEC2", "instanceType": p.InstanceType, "regionCode": p.RegionCode,
				"operatingSystem": p.OperatingSystem, "tenancy": p.Tenancy, "preInstalledSw": p.PreInstalledSw,
				"capacitystatus": p.CapacityStatus, "licenseModel": "No License required", "usagetype": "BoxUsage:" + p.InstanceType,
				"operation": "RunInstances",
			},
		},
		"serviceCode":     "AmazonEC2",
		"version":         "20261201000000",
		"publicationDate": eff,
		"terms": map[string]any{
			"OnDemand": map[string]any{
				p.SKU + "." + onDemandTerm: map[string]any{
					"offerTermCode": onDemandTerm, "sku": p.SKU, "effectiveDate": eff, "termAttributes": map[string]string{},
					"priceDimensions": map[string]any{
						p.SKU + "." + onDemandTerm + "." + hourly: map[string]any{
							"rateCode": p.SKU + "." + onDemandTerm + "." + hourly, "unit": "Hrs", "beginRange": "0", "endRange": "Inf",
							"description":  fmt.Sprintf("$%s per On Demand Linux %s Instance Hour", p.USDPerHour, p.InstanceType),
							"appliesTo":    []string{},
							"pricePerUnit": map[string]string{"USD": p.USDPerHour},
						},
					},
				},
			},
		},
	}
	if p.ReservedUSDPerHour != "" {
		doc["terms"].(map[string]any)["Reserved"] = map[string]any{
			p.SKU + "." + reservedTerm: map[string]any{
				"offerTermCode": reservedTerm, "sku": p.SKU, "effectiveDate": eff,
				"termAttributes": map[string]string{"LeaseContractLength": "1yr", "OfferingClass": "standard", "PurchaseOption": "No Upfront"},
				"priceDimensions": map[string]any{
					p.SKU + "." + reservedTerm + "." + hourly: map[string]any{
						"rateCode": p.SKU + "." + reservedTerm + "." + hourly, "unit": "Hrs", "beginRange": "0", "endRange": "Inf",
						"description": "reserved", "appliesTo": []string{}, "pricePerUnit": map[string]string{"USD": p.ReservedUSDPerHour},
					},
				},
			},
		}
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}
