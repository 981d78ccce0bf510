package strategy

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"sortie/schema"
)

// ErrNoCandidates is returned by Candidates when no placement satisfies the
// request. The controller ends such a job FAILED_PRECHECKS: no retry can
// conjure a region the provider does not have.
var ErrNoCandidates = errors.New("no placement satisfies the request")

// Candidate is one place a task may be launched, with the resources to
// launch it with.
type Candidate struct {
	Placement schema.Placement
	// Resources are the task's resources merged with the any_of/ordered item
	// that produced this candidate, with cloud/region/zone set to Placement
	// and infra, any_of and ordered cleared.
	Resources schema.Resources
}

// Candidates lists where a task may run:
//
//   - resources.ordered: each item's placements, item by item in the order
//     given, each item's placements in the provider's order;
//   - resources.any_of: every item's placements by the provider's preference.
//     offered only ranks the placements of one request, so the items'
//     lists are interleaved by rank (every item's first choice, then every
//     item's second ...), ties in the order the items are written;
//   - otherwise every placement offered for the resources themselves.
//
// Each item overrides the base resources' fields that it sets. Location is
// a hierarchy: an item that names another cloud drops the base's region and
// zone, and one that names another region drops the base's zone, so
// {region: us-east-1, zone: us-east-1a} + {region: us-west-2} asks for any
// zone of us-west-2. infra ("aws/us-east-1/us-east-1a", "*" for any part) is
// read as cloud/region/zone and wins over those fields at the same level.
//
// offered(r) returns what the provider(s) offer for r's cloud/region/zone in
// preference order, and (nil, nil) when it offers nothing there; r.Cloud is
// empty when the task names no cloud, and offered should then ask every
// enabled provider. Placements that do not satisfy a pinned cloud, region or
// zone are dropped here whatever offered returns. Identical candidates are
// listed once. An error from offered is returned as it is wrapped; when no
// candidate is left, the error wraps ErrNoCandidates.
func Candidates(r schema.Resources, offered func(schema.Resources) ([]schema.Placement, error)) ([]Candidate, error) {
	base := resolveInfra(r)
	base.AnyOf, base.Ordered = nil, nil

	field, items := "", []schema.Resources{{}}
	switch {
	case len(r.AnyOf) > 0 && len(r.Ordered) > 0:
		return nil, errors.New("resources: any_of and ordered are both set; keep one of them")
	case len(r.Ordered) > 0:
		field, items = "resources.ordered", r.Ordered
	case len(r.AnyOf) > 0:
		field, items = "resources.any_of", r.AnyOf
	}

	perItem := make([][]Candidate, len(items))
	for i, item := range items {
		merged := merge(base, resolveInfra(item))
		ps, err := offered(merged)
		if err != nil {
			name := "resources"
			if field != "" {
				name = fmt.Sprintf("%s[%d]", field, i)
			}
			return nil, fmt.Errorf("placements for %s (%s): %w", name, describeRequest(merged), err)
		}
		for _, p := range ps {
			if !satisfies(p, merged) {
				continue
			}
			c := merged
			c.Cloud, c.Region, c.Zone = p.Cloud, p.Region, p.Zone
			perItem[i] = append(perItem[i], Candidate{Placement: p, Resources: c})
		}
	}

	var out []Candidate
	add := func(c Candidate) {
		if !slices.ContainsFunc(out, func(o Candidate) bool { return reflect.DeepEqual(o, c) }) {
			out = append(out, c)
		}
	}
	if field == "resources.any_of" {
		for rank := 0; ; rank++ {
			more := false
			for _, cs := range perItem {
				if rank < len(cs) {
					add(cs[rank])
					more = true
				}
			}
			if !more {
				break
			}
		}
	} else {
		for _, cs := range perItem {
			for _, c := range cs {
				add(c)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w (%s): check resources.cloud, region, zone and infra against the regions the provider offers",
			ErrNoCandidates, describeRequest(base))
	}
	return out, nil
}

// resolveInfra folds r.Infra into Cloud/Region/Zone and clears it.
func resolveInfra(r schema.Resources) schema.Resources {
	if r.Infra == "" {
		return r
	}
	parts := strings.SplitN(strings.TrimSpace(r.Infra), "/", 3)
	fields := []*string{&r.Cloud, &r.Region, &r.Zone}
	for i, part := range parts {
		part = strings.TrimSpace(part)
		if part == "" || part == "*" {
			continue
		}
		if i == 0 {
			part = strings.ToLower(part)
		}
		*fields[i] = part
	}
	r.Infra = ""
	return r
}

// merge overrides base with the fields item sets. use_spot can only be
// switched on by an item: the schema cannot tell "false" from "unset".
func merge(base, item schema.Resources) schema.Resources {
	m := base
	if item.Cloud != "" {
		if !strings.EqualFold(item.Cloud, base.Cloud) {
			m.Region, m.Zone = "", ""
		}
		m.Cloud = item.Cloud
	}
	if item.Region != "" {
		if item.Region != m.Region {
			m.Zone = ""
		}
		m.Region = item.Region
	}
	m.Zone = cmp.Or(item.Zone, m.Zone)
	m.InstanceType = cmp.Or(item.InstanceType, m.InstanceType)
	m.CPUs = cmp.Or(item.CPUs, m.CPUs)
	m.Memory = cmp.Or(item.Memory, m.Memory)
	if item.Accelerators != nil {
		m.Accelerators, m.AcceleratorShare = item.Accelerators, item.AcceleratorShare
	}
	m.UseSpot = m.UseSpot || item.UseSpot
	m.DiskSize = cmp.Or(item.DiskSize, m.DiskSize)
	m.MaxHourlyCost = cmp.Or(item.MaxHourlyCost, m.MaxHourlyCost)
	m.ImageID = cmp.Or(item.ImageID, m.ImageID)
	if item.Ports != nil {
		m.Ports = item.Ports
	}
	m.DiskTier = cmp.Or(item.DiskTier, m.DiskTier)
	m.NetworkTier = cmp.Or(item.NetworkTier, m.NetworkTier)
	if item.Labels != nil {
		m.Labels = item.Labels
	}
	m.JobRecovery = cmp.Or(item.JobRecovery, m.JobRecovery)
	m.AnyOf, m.Ordered = nil, nil
	return m
}

// satisfies reports whether p is within the cloud/region/zone r pins.
func satisfies(p schema.Placement, r schema.Resources) bool {
	return (r.Cloud == "" || strings.EqualFold(p.Cloud, r.Cloud)) &&
		(r.Region == "" || p.Region == r.Region) &&
		(r.Zone == "" || p.Zone == r.Zone)
}

// describeRequest names a request's location for error messages.
func describeRequest(r schema.Resources) string {
	var parts []string
	for _, f := range []struct{ k, v string }{{"cloud", r.Cloud}, {"region", r.Region}, {"zone", r.Zone}} {
		if f.v != "" {
			parts = append(parts, f.k+" "+f.v)
		}
	}
	if len(parts) == 0 {
		return "any cloud"
	}
	return strings.Join(parts, ", ")
}
