// Package billingfake is a stand-in for the Cloud Billing Catalog API for
// tests: it answers services.skus.list
// (GET /v1/services/{service}/skus) in the API's REST JSON shape (skus
// with category, serviceRegions and pricingInfo, each price a tiered rate
// of units and nanos of a currency; nextPageToken), with the SKUs a test
// adds. It knows no price of its own.
package billingfake

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ComputeEngine is the Compute Engine service's id in the catalog.
const ComputeEngine = "6F81-5844-456A"

// SKU is one SKU of Compute Engine.
type SKU struct {
	ID          string
	Description string
	// ResourceGroup is the category's resource group: CPU, RAM, GPU.
	ResourceGroup string
	// UsageType is OnDemand or Preemptible (spot).
	UsageType string
	Regions   []string
	// UsageUnit is h for a core or GPU hour, GiBy.h for memory.
	UsageUnit string
	// USD is the price of one usage unit.
	USD       float64
	Effective time.Time
}

// Fake is the API. Its zero value is not usable: see New.
type Fake struct {
	mu       sync.Mutex
	skus     []SKU
	pageSize int
	calls    int
	fail     int
}

// New is a catalog with no SKUs whose pages hold pageSize SKUs (0: 5000,
// the API's).
func New(pageSize int) *Fake {
	if pageSize <= 0 {
		pageSize = 5000
	}
	return &Fake{pageSize: pageSize}
}

// Add adds SKUs.
func (f *Fake) Add(skus ...SKU) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range skus {
		if s.ID == "" {
			s.ID = fmt.Sprintf("%04X-%04X-%04X", len(f.skus)+1, len(f.skus)+1, len(f.skus)+1)
		}
		f.skus = append(f.skus, s)
	}
}

// Fail makes the next n calls fail with 503, as the API does when it is
// down.
func (f *Fake) Fail(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// Calls is how many pages were answered.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// ServeHTTP answers GET /v1/services/{service}/skus.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	service, ok := strings.CutPrefix(r.URL.Path, "/v1/services/")
	service, ok2 := strings.CutSuffix(service, "/skus")
	if !ok || !ok2 || r.Method != http.MethodGet {
		writeError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("the fake answers GET /v1/services/{service}/skus, not %s %s", r.Method, r.URL.Path))
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "the fake was told to fail")
		return
	}
	f.calls++
	if service != ComputeEngine {
		writeError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("service %q is not in the fake's catalog", service))
		return
	}
	if c := r.URL.Query().Get("currencyCode"); c != "" && c != "USD" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "the fake prices in USD alone")
		return
	}
	start := 0
	if tok := r.URL.Query().Get("pageToken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(f.skus) {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "bad pageToken")
			return
		}
		start = n
	}
	size := f.pageSize
	if ps, err := strconv.Atoi(r.URL.Query().Get("pageSize")); err == nil && ps > 0 && ps < size {
		size = ps
	}
	end := min(start+size, len(f.skus))
	out := map[string]any{"skus": []any{}}
	var skus []any
	for _, s := range f.skus[start:end] {
		skus = append(skus, skuJSON(s))
	}
	if skus != nil {
		out["skus"] = skus
	}
	if end < len(f.skus) {
		out["nextPageToken"] = strconv.Itoa(end)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// skuJSON is s as the REST API writes a Sku: int64 fields as strings.
func skuJSON(s SKU) map[string]any {
	units := math.Floor(s.USD)
	nanos := math.Round((s.USD - units) * 1e9)
	unitDesc := map[string]string{"h": "hour", "GiBy.h": "gibibyte hour"}[s.UsageUnit]
	base := map[string]string{"h": "s", "GiBy.h": "By.s"}[s.UsageUnit]
	factor := map[string]float64{"h": 3600, "GiBy.h": 3600 * (1 << 30)}[s.UsageUnit]
	return map[string]any{
		"name":        "services/" + ComputeEngine + "/skus/" + s.ID,
		"skuId":       s.ID,
		"description": s.Description,
		"category": map[string]string{
			"serviceDisplayName": "Compute Engine", "resourceFamily": "Compute",
			"resourceGroup": s.ResourceGroup, "usageType": s.UsageType,
		},
		"serviceRegions": s.Regions,
		"pricingInfo": []any{map[string]any{
			"summary": "",
			"pricingExpression": map[string]any{
				"usageUnit": s.UsageUnit, "usageUnitDescription": unitDesc, "baseUnit": base,
				"baseUnitDescription": base, "baseUnitConversionFactor": factor, "displayQuantity": 1,
				"tieredRates": []any{map[string]any{
					"startUsageAmount": 0,
					"unitPrice":        map[string]any{"currencyCode": "USD", "units": strconv.FormatInt(int64(units), 10), "nanos": int64(nanos)},
				}},
			},
			"currencyConversionRate": 1,
			"effectiveTime":          s.Effective.UTC().Format(time.RFC3339Nano),
		}},
		"serviceProviderName": "Google",
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": code}})
}
