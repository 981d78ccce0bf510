package service

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sortie/controller/store"
	"sortie/schema"
)

// resourcesOf writes what a task asks for as `sky jobs queue` does: its
// nodes, then its accelerators ("1x[A100:8]"), else its instance type,
// else its CPUs ("2x[CPU:4+]"), else "default" (the cloud's default
// instance); "[Spot]" follows when it asks for spot capacity. A task
// whose accelerators are only in its any_of / ordered candidates shows
// the candidates' ("1x[A100:8, H100:8]").
func resourcesOf(t *schema.Task) string {
	r := t.Resources
	cands := append(slices.Clone(r.AnyOf), r.Ordered...)
	what := accelerators(r.Accelerators)
	if what == "" {
		var seen []string
		for _, c := range cands {
			if a := accelerators(c.Accelerators); a != "" && !slices.Contains(seen, a) {
				seen = append(seen, a)
			}
		}
		what = strings.Join(seen, ", ")
	}
	switch {
	case what != "":
	case r.InstanceType != "":
		what = r.InstanceType
	case r.CPUs != "":
		what = "CPU:" + r.CPUs
	default:
		what = "default"
	}
	spot := r.UseSpot
	if !spot && len(cands) > 0 {
		spot = !slices.ContainsFunc(cands, func(c schema.Resources) bool { return !c.UseSpot })
	}
	out := fmt.Sprintf("%dx[%s]", max(t.NumNodes, 1), what)
	if spot {
		out += "[Spot]"
	}
	return out
}

// accelerators writes name -> count as "A100:8", names in order.
func accelerators(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%d", name, m[name]))
	}
	return strings.Join(parts, ", ")
}

// location writes where an attempt runs as "aws/us-east-1a": the cloud
// and its zone, or its region when it has no zone; nil when unplaced.
func location(p *store.Placement) *string {
	if p == nil || p.Cloud == "" {
		return nil
	}
	out := p.Cloud
	switch {
	case p.Zone != "":
		out += "/" + p.Zone
	case p.Region != "":
		out += "/" + p.Region
	}
	return &out
}
