package service

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// taskResources is what a task asks for, in what a queue shows of it; the
// store keeps it as JSON (tasks.resources).
type taskResources struct {
	Nodes int `json:"nodes"`
	// Accelerators are the task's, or its candidates' when only they name
	// some: "A100:8", "A100:8, H100:8".
	Accelerators string `json:"accelerators,omitempty"`
	InstanceType string `json:"instance_type,omitempty"`
	CPUs         string `json:"cpus,omitempty"`
	Spot         bool   `json:"spot,omitempty"`
}

// resourcesOf is what task t asks for; spot when it, or every candidate
// of it, asks for spot capacity.
func resourcesOf(t *schema.Task) taskResources {
	r := t.Resources
	cands := append(slices.Clone(r.AnyOf), r.Ordered...)
	out := taskResources{Nodes: max(t.NumNodes, 1), Accelerators: acceleratorsOf(r), InstanceType: r.InstanceType, CPUs: r.CPUs,
		Spot: r.UseSpot || (len(cands) > 0 && !slices.ContainsFunc(cands, func(c schema.Resources) bool { return !c.UseSpot }))}
	if out.Accelerators == "" {
		var seen []string
		for _, c := range cands {
			if a := accelerators(c.Accelerators); a != "" && !slices.Contains(seen, a) {
				seen = append(seen, a)
			}
		}
		out.Accelerators = strings.Join(seen, ", ")
	}
	return out
}

// grown is r at the size job_recovery.escalate chose: its accelerators,
// or its CPUs on an instance the escalation picks.
func (r taskResources) grown(s *strategy.Size) taskResources {
	if s == nil {
		return r
	}
	if s.Accelerators != nil {
		r.Accelerators = accelerators(s.Accelerators)
	}
	if s.CPUs != "" {
		r.CPUs, r.InstanceType = s.CPUs, ""
	}
	return r
}

// String writes r as `sky jobs queue` does: the nodes, then the
// accelerators ("1x[A100:8]"), else the instance type, else the CPUs
// ("2x[CPU:4+]"), else "default" (the cloud's default instance);
// "[Spot]" follows for spot capacity.
func (r taskResources) String() string {
	what := r.Accelerators
	switch {
	case what != "":
	case r.InstanceType != "":
		what = r.InstanceType
	case r.CPUs != "":
		what = "CPU:" + r.CPUs
	default:
		what = "default"
	}
	out := fmt.Sprintf("%dx[%s]", r.Nodes, what)
	if r.Spot {
		out += "[Spot]"
	}
	return out
}

// storedResources is the JSON the store keeps of what t asks for.
func storedResources(t *schema.Task) string {
	b, _ := json.Marshal(resourcesOf(t))
	return string(b)
}

// viewResources is what a job's current task asks for, at the size an
// escalation chose; nil for a task stored before it was kept.
func viewResources(stored string, size *strategy.Size) *string {
	var r taskResources
	if stored == "" || json.Unmarshal([]byte(stored), &r) != nil || r.Nodes == 0 {
		return nil
	}
	s := r.grown(size).String()
	return &s
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
