package strategy

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"sortie/schema"
)

// Size is the part of a task's resources that job_recovery.escalate grows:
// only the dimensions it grows are set. CPUs and Memory are written as in
// resources ("8", "32+": GB); Accelerators holds one accelerator, or is nil
// before the first rung.
type Size struct {
	CPUs         string         `json:"cpus,omitempty"`
	Memory       string         `json:"memory,omitempty"`
	Accelerators map[string]int `json:"accelerators,omitempty"`
}

// IsZero says whether s sets nothing.
func (s Size) IsZero() bool { return s.CPUs == "" && s.Memory == "" && s.Accelerators == nil }

// String names a size the way reasons and `jobs show` do: "cpus 8, memory
// 32 GB, accelerators A100:1".
func (s Size) String() string {
	var parts []string
	if s.CPUs != "" {
		parts = append(parts, "cpus "+strings.TrimSuffix(s.CPUs, "+"))
	}
	if s.Memory != "" {
		parts = append(parts, "memory "+strings.TrimSuffix(s.Memory, "+")+" GB")
	}
	if s.Accelerators != nil {
		parts = append(parts, "accelerators "+rungOf(s.Accelerators))
	}
	return strings.Join(parts, ", ")
}

// Rung writes the size's accelerator as escalate.accelerators does,
// "A100:1"; "none" when it has none.
func (s Size) Rung() string { return rungOf(s.Accelerators) }

// SizeOf is the size a task's first attempt asks for, in the dimensions e
// grows: what escalation starts from.
func SizeOf(r schema.Resources, e *schema.Escalate) Size {
	var s Size
	if e == nil {
		return s
	}
	if e.CPUs > 0 {
		s.CPUs = r.CPUs
	}
	if e.Memory > 0 {
		s.Memory = r.Memory
	}
	if len(e.Accelerators) > 0 {
		s.Accelerators = maps.Clone(r.Accelerators)
	}
	return s
}

// Resize is r asking for s: each dimension s sets replaces that of
// resources and of every any_of/ordered candidate, so an escalated attempt
// asks for its size wherever it is placed.
func Resize(r schema.Resources, s Size) schema.Resources {
	apply := func(x *schema.Resources, base bool) {
		if s.CPUs != "" {
			x.CPUs = ""
			if base {
				x.CPUs = s.CPUs
			}
		}
		if s.Memory != "" {
			x.Memory = ""
			if base {
				x.Memory = s.Memory
			}
		}
		if s.Accelerators != nil {
			x.Accelerators, x.AcceleratorShare = nil, 0
			if base {
				x.Accelerators = maps.Clone(s.Accelerators)
			}
		}
	}
	apply(&r, true)
	resizeAll := func(items []schema.Resources) []schema.Resources {
		if items == nil {
			return nil
		}
		out := slices.Clone(items)
		for i := range out {
			apply(&out[i], false)
		}
		return out
	}
	r.AnyOf, r.Ordered = resizeAll(r.AnyOf), resizeAll(r.Ordered)
	return r
}

// Grow is the escalation rule: the size after cur under e, with one
// "memory 16 → 32 GB" step per dimension that grew. Memory and CPUs are
// multiplied by their factor and stop at their cap (CPUs round up to a
// whole count); accelerators move to the rung after cur's, or to the first
// when cur has none. A dimension at its cap, or at the last rung, stays.
// ok is false when nothing can grow; top then says why, one part per
// dimension.
func Grow(e schema.Escalate, cur Size) (next Size, steps []string, top []string, ok bool) {
	next = Size{CPUs: cur.CPUs, Memory: cur.Memory, Accelerators: maps.Clone(cur.Accelerators)}
	grow := func(field string, f schema.Factor, from, ceiling, unit string, whole bool) string {
		if f <= 0 || from == "" {
			return from
		}
		plus := strings.HasSuffix(from, "+")
		v, err := strconv.ParseFloat(strings.TrimSuffix(from, "+"), 64)
		if err != nil || v <= 0 {
			top = append(top, fmt.Sprintf("%s %q is not an amount", field, from))
			return from
		}
		limit := math.Inf(1)
		if ceiling != "" {
			if c, err := strconv.ParseFloat(ceiling, 64); err == nil {
				limit = c
			}
		}
		if v >= limit {
			top = append(top, fmt.Sprintf("%s %s%s is max_%s", field, amount(v), unit, field))
			return from
		}
		n := v * float64(f)
		if whole {
			n = math.Ceil(n - 1e-9)
		}
		n = min(n, limit)
		steps = append(steps, fmt.Sprintf("%s %s → %s%s", field, amount(v), amount(n), unit))
		out := amount(n)
		if plus {
			out += "+"
		}
		return out
	}
	next.Memory = grow("memory", e.Memory, cur.Memory, e.MaxMemory, " GB", false)
	next.CPUs = grow("cpus", e.CPUs, cur.CPUs, e.MaxCPUs, "", true)
	if len(e.Accelerators) > 0 {
		at := -1
		if cur.Accelerators != nil {
			at = slices.IndexFunc(e.Accelerators, func(r string) bool { return strings.EqualFold(r, rungOf(cur.Accelerators)) })
		}
		switch {
		case cur.Accelerators != nil && at < 0:
			top = append(top, fmt.Sprintf("accelerators %s is not in escalate.accelerators", rungOf(cur.Accelerators)))
		case at == len(e.Accelerators)-1:
			top = append(top, fmt.Sprintf("accelerators %s is the last of escalate.accelerators", e.Accelerators[at]))
		default:
			name, n := schema.ParseRung(e.Accelerators[at+1])
			from := "none"
			if at >= 0 {
				from = e.Accelerators[at]
			}
			steps = append(steps, fmt.Sprintf("accelerators %s → %s", from, e.Accelerators[at+1]))
			next.Accelerators = map[string]int{name: n}
		}
	}
	if len(steps) == 0 {
		return cur, nil, top, false
	}
	return next, steps, nil, true
}

// rungOf writes a one-accelerator map as a rung, "A100:1"; several (which
// escalation never makes) are joined in name order.
func rungOf(accs map[string]int) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(accs)) {
		parts = append(parts, schema.Rung(name, accs[name]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// amount writes a grown amount without float noise: 32, 24.5, 0.75.
func amount(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}
