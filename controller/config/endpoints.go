package config

import (
	"fmt"
	"net/url"

	"sortie/schema"
)

// badEndpoints checks the metadata endpoints the node agents are given:
// each is a base URL, http or https, a host and nothing after it.
func (cfg *Config) badEndpoints(lines map[string]int) []schema.Problem {
	var out []schema.Problem
	for _, e := range []struct{ key, v, def string }{
		{"aws.imds_endpoint", cfg.AWS.IMDSEndpoint, "EC2's own, http://169.254.169.254"},
		{"gcp.metadata_endpoint", cfg.GCP.MetadataEndpoint, "GCE's own, http://metadata.google.internal"},
		{"aws.pricing_endpoint", cfg.AWS.PricingEndpoint, "AWS's own Price List Query API"},
		{"gcp.billing_endpoint", cfg.GCP.BillingEndpoint, "Google's own Cloud Billing Catalog API"},
	} {
		if e.v == "" {
			continue
		}
		u, err := url.Parse(e.v)
		if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && (u.Path == "" || u.Path == "/") && u.RawQuery == "" {
			continue
		}
		out = append(out, schema.Problem{Path: e.key, Line: lines[e.key],
			Message: fmt.Sprintf("%q is not a base URL; give http://HOST[:PORT] (no path), or leave it out for %s", e.v, e.def)})
	}
	return out
}
