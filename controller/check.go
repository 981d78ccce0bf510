package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sortie/provision/aws"
)

// CloudCheck says whether one cloud is usable, and why not.
type CloudCheck struct {
	Cloud    string   `json:"cloud"`
	OK       bool     `json:"ok"`
	Details  []string `json:"details"`
	Problems []string `json:"problems"`
}

// Check reports every cloud this controller knows: local and sim always
// work; the others are asked with their standard credential chains.
func (s *Service) Check(ctx context.Context) []CloudCheck {
	var regions []string
	for _, r := range s.Providers.LocalRegions() {
		regions = append(regions, fmt.Sprintf("%s (%s)", r.Name, strings.Join(r.Zones, ", ")))
	}
	out := []CloudCheck{{Cloud: "local", OK: true, Details: []string{"regions: " + strings.Join(regions, "; ")}, Problems: []string{}}}
	names := make([]string, 0, len(s.Providers.Checks))
	for name := range s.Providers.Checks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := s.Providers.Checks[name](ctx, s.Config)
		c.Cloud, c.OK = name, len(c.Problems) == 0
		if c.Details == nil {
			c.Details = []string{}
		}
		if c.Problems == nil {
			c.Problems = []string{}
		}
		out = append(out, c)
	}
	return out
}

// CheckAWS asks AWS whether credentials work and which regions are enabled.
func CheckAWS(ctx context.Context, cfg Config) CloudCheck {
	r, err := aws.Check(ctx, AWSConfig(cfg))
	c := CloudCheck{Problems: r.Problems}
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
	}
	if r.CredentialSource != "" {
		c.Details = append(c.Details, "credentials: "+r.CredentialSource)
	}
	if len(r.Regions) > 0 {
		c.Details = append(c.Details, "regions: "+strings.Join(r.Regions, ", "))
	}
	return c
}
