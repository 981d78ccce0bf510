// Package fit chooses a cloud machine type for a task's resources: it
// parses the cpus and memory amounts ("4", "4+") and picks the smallest
// type on offer that has them and one of the accelerators asked for. The
// cloud backends describe their types as Offers; what a cloud will not
// launch at all (bare metal, shared cores) they leave out before asking.
//
// It must not import sortie/controller/...: a provider's part knows nothing of
// jobs.
package fit

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"sortie/schema"
)

// Defaults for a task that names no machine type, CPUs, memory or
// accelerators: a general-purpose machine with room for a typical script.
const (
	DefaultCPUs   = "2+"
	DefaultMemory = "8+"
)

// Amount is a parsed cpus or memory request: exactly N, or at least N. The
// zero Amount (nothing asked) admits any value.
type Amount struct {
	N       float64
	AtLeast bool
	Set     bool
}

// ParseAmount parses "N" or "N+" (N > 0, spaces allowed around both); ""
// is the zero Amount. field names the resources key in the error.
func ParseAmount(field, s string) (Amount, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Amount{}, nil
	}
	a := Amount{Set: true}
	if strings.HasSuffix(s, "+") {
		a.AtLeast = true
		s = strings.TrimSpace(strings.TrimSuffix(s, "+"))
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 {
		return Amount{}, fmt.Errorf("resources.%s: %q is not an amount; use a number or \"N+\"", field, s)
	}
	a.N = n
	return a, nil
}

// tolerance keeps an exact amount ("7.5") equal to a size the cloud gives
// in other units and a backend divides (7680 MiB / 1024).
const tolerance = 1e-9

// Admits reports whether a machine with v of the amount fits it.
func (a Amount) Admits(v float64) bool {
	if !a.Set {
		return true
	}
	if a.AtLeast {
		return v >= a.N-tolerance
	}
	return v > a.N-tolerance && v < a.N+tolerance
}

// AcceleratorMatch reports whether the accelerator a cloud calls offered is
// the one a task calls asked.
type AcceleratorMatch func(offered, asked string) bool

// SameName is the AcceleratorMatch of clouds whose accelerator names are
// what tasks write: equal but for case.
func SameName(offered, asked string) bool { return strings.EqualFold(offered, asked) }

// Request is what a machine type must have.
type Request struct {
	CPUs, Memory Amount
	// Accelerators are alternatives, as in SkyPilot: any one name with at
	// least its count will do. Empty means the type must have none, since
	// accelerators cost far more than the CPUs beside them.
	Accelerators map[string]int
	// Match tells offered accelerators from asked ones; nil means SameName.
	Match AcceleratorMatch
}

// ParseRequest reads the cpus, memory and accelerators of r. A task that
// asks for none of the three gets DefaultCPUs and DefaultMemory.
// InstanceType is not looked at: a named type needs no fitting.
func ParseRequest(r schema.Resources, match AcceleratorMatch) (Request, error) {
	cpus, memory := r.CPUs, r.Memory
	if cpus == "" && memory == "" && len(r.Accelerators) == 0 {
		cpus, memory = DefaultCPUs, DefaultMemory
	}
	c, err := ParseAmount("cpus", cpus)
	if err != nil {
		return Request{}, err
	}
	m, err := ParseAmount("memory", memory)
	if err != nil {
		return Request{}, err
	}
	return Request{CPUs: c, Memory: m, Accelerators: r.Accelerators, Match: match}, nil
}

// Offer is what one machine type has.
type Offer struct {
	Name      string
	CPUs      float64
	MemoryGiB float64
	// Accelerators maps the cloud's name of each accelerator to its count.
	Accelerators map[string]int
}

// accelerators is the total count of o's accelerators.
func (o Offer) accelerators() int {
	n := 0
	for _, c := range o.Accelerators {
		n += c
	}
	return n
}

// Admits reports whether o fits r.
func (r Request) Admits(o Offer) bool {
	if !r.CPUs.Admits(o.CPUs) || !r.Memory.Admits(o.MemoryGiB) {
		return false
	}
	if len(r.Accelerators) == 0 {
		return len(o.Accelerators) == 0
	}
	match := r.Match
	if match == nil {
		match = SameName
	}
	for asked, want := range r.Accelerators {
		for offered, have := range o.Accelerators {
			if have >= want && match(offered, asked) {
				return true
			}
		}
	}
	return false
}

// Smallest picks the smallest offer r admits: fewest CPUs, then least
// memory, then fewest accelerators, then the first name in byte order, so
// that the same catalog always gives the same choice. It reports false
// when none fits.
func Smallest(offers []Offer, r Request) (Offer, bool) {
	var best Offer
	found := false
	for _, o := range offers {
		if r.Admits(o) && (!found || smaller(o, best)) {
			best, found = o, true
		}
	}
	return best, found
}

func smaller(a, b Offer) bool {
	return cmp.Or(
		cmp.Compare(a.CPUs, b.CPUs),
		cmp.Compare(a.MemoryGiB, b.MemoryGiB),
		cmp.Compare(a.accelerators(), b.accelerators()),
		strings.Compare(a.Name, b.Name),
	) < 0
}
