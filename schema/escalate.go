package schema

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Escalate is job_recovery.escalate: a failure where any node exits with
// one of OnExitCodes restarts the task on a bigger instance, a new cluster,
// as a restart on error. Each escalation grows every dimension given here
// that is not at its maximum yet; when none can grow, the job ends.
type Escalate struct {
	// OnExitCodes are the codes that mean "too small" (137: killed for
	// lack of memory). At least one is required.
	OnExitCodes []int `json:"on_exit_codes"`
	// Memory and CPUs multiply resources.memory and resources.cpus at each
	// escalation; zero leaves that amount as it is.
	Memory Factor `json:"memory,omitempty"`
	CPUs   Factor `json:"cpus,omitempty"`
	// MaxMemory (GB) and MaxCPUs cap the growth: the last step stops at
	// the cap. Empty means no cap (max_restarts_on_errors still bounds the
	// number of escalations).
	MaxMemory string `json:"max_memory,omitempty"`
	MaxCPUs   string `json:"max_cpus,omitempty"`
	// Accelerators are the rungs to climb, in order, each "NAME:COUNT".
	// Each escalation moves to the rung after the task's accelerator (to
	// the first when the task asks for none).
	Accelerators []string `json:"accelerators,omitempty"`
}

// Factor is an escalation's multiplier, written "2x" (or "1.5x").
type Factor float64

// String writes the factor as the task file does: "2x".
func (f Factor) String() string {
	return strconv.FormatFloat(float64(f), 'f', -1, 64) + "x"
}

func (f Factor) MarshalJSON() ([]byte, error) { return json.Marshal(f.String()) }

func (f *Factor) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("factor: %w", err)
	}
	v, ok := parseFactor(s)
	if !ok {
		return fmt.Errorf("factor %q: want a number above 1 followed by x, e.g. 2x", s)
	}
	*f = Factor(v)
	return nil
}

var factorRE = lazyRegexp(`^(\d+(?:\.\d+)?|\.\d+)\s*[xX]$`)

// parseFactor reads "2x", "1.5x"; false for anything else, or a factor of
// 1 or less, which would never grow.
func parseFactor(s string) (float64, bool) {
	m := factorRE().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v <= 1 || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// escalateFields are the keys of job_recovery.escalate.
var escalateFields = []string{"on_exit_codes", "memory", "max_memory", "cpus", "max_cpus", "accelerators"}

// escalate reads job_recovery.escalate. What it grows from (resources'
// memory, cpus and accelerators) is checked by checkEscalate, once the
// resources are read.
func (d *decoder) escalate(path string, v any) *Escalate {
	if v == nil {
		return nil
	}
	m, ok := d.mapping(path, v, escalateFields, nil)
	if !ok {
		return nil
	}
	e := &Escalate{}
	codesPath := join(path, "on_exit_codes")
	if raw, present := m["on_exit_codes"]; !present || raw == nil {
		d.ps.missing(codesPath, "is required: list the exit codes that mean the task needs a bigger instance, e.g. [137]")
	} else if e.OnExitCodes = d.exitCodes(codesPath, raw); len(e.OnExitCodes) == 0 {
		if items, isList := raw.([]any); isList && len(items) == 0 {
			d.ps.add(codesPath, raw, "is empty; list the exit codes that mean the task needs a bigger instance, e.g. [137]")
		}
	}
	e.Memory = d.factor(join(path, "memory"), m["memory"], "memory")
	e.CPUs = d.factor(join(path, "cpus"), m["cpus"], "cpus")
	e.MaxMemory = d.ceiling(join(path, "max_memory"), m["max_memory"], true)
	e.MaxCPUs = d.ceiling(join(path, "max_cpus"), m["max_cpus"], false)
	e.Accelerators = d.rungs(join(path, "accelerators"), m["accelerators"])
	if e.Memory == 0 && e.CPUs == 0 && e.Accelerators == nil && m["memory"] == nil && m["cpus"] == nil && m["accelerators"] == nil {
		d.ps.missing(path, "grows nothing; give memory (e.g. 2x), cpus (e.g. 2x) or accelerators (a list to climb, e.g. [L4, A100])")
	}
	if e.MaxMemory != "" && m["memory"] == nil {
		d.ps.missing(join(path, "max_memory"), "caps nothing: escalate.memory is not set; add memory: 2x, or remove max_memory")
	}
	if e.MaxCPUs != "" && m["cpus"] == nil {
		d.ps.missing(join(path, "max_cpus"), "caps nothing: escalate.cpus is not set; add cpus: 2x, or remove max_cpus")
	}
	return e
}

// factor reads a multiplier: "2x", "1.5x".
func (d *decoder) factor(path string, v any, what string) Factor {
	if v == nil {
		return 0
	}
	fix := fmt.Sprintf("write a factor above 1, e.g. 2x (each escalation multiplies %s by it)", what)
	s, isString := v.(string)
	if !isString {
		d.ps.add(path, v, "is %s; %s", typeName(v), fix)
		return 0
	}
	f, ok := parseFactor(s)
	if !ok {
		if m := factorRE().FindStringSubmatch(strings.TrimSpace(s)); m != nil {
			d.ps.add(path, v, "would never grow %s; %s", what, fix)
		} else {
			d.ps.add(path, v, "is not a factor; %s", fix)
		}
		return 0
	}
	return Factor(f)
}

// ceiling reads max_memory (GB, units allowed) or max_cpus: an amount,
// never "N+".
func (d *decoder) ceiling(path string, v any, memory bool) string {
	if v == nil {
		return ""
	}
	if s, isString := v.(string); isString && strings.HasSuffix(strings.TrimSpace(s), "+") {
		d.ps.add(path, v, "is not a limit; drop the +, e.g. %s", strings.TrimSuffix(strings.TrimSpace(s), "+"))
		return ""
	}
	return d.quantity(path, v, memory)
}

// rungs reads escalate.accelerators: a list of "NAME" or "NAME:COUNT",
// climbed in order.
func (d *decoder) rungs(path string, v any) []string {
	if v == nil {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		d.ps.add(path, v, `is %s; list the accelerators to climb in order, e.g. [L4, A100, "H100:2"]`, typeName(v))
		return nil
	}
	if len(items) == 0 {
		d.ps.add(path, v, `is empty; list the accelerators to climb in order, e.g. [L4, A100, "H100:2"], or remove it`)
		return nil
	}
	var out []string
	for i, item := range items {
		p := index(path, i)
		s, isString := item.(string)
		if !isString {
			d.ps.add(p, item, `is %s; write each accelerator as "NAME" or "NAME:COUNT"`, typeName(item))
			continue
		}
		before := len(d.shares)
		name, n, ok := d.accelerator(p, s)
		if !ok {
			continue
		}
		if len(d.shares) > before {
			d.shares = d.shares[:before]
			d.ps.add(p, item, "is a fraction of an accelerator; escalation moves to bigger whole accelerators, so list whole counts")
			continue
		}
		if strings.HasPrefix(strings.ToLower(name), "tpu-") {
			d.ps.add(p, item, "asks for a Cloud TPU (%s), which sortie does not launch; list GPUs instead", name)
			continue
		}
		rung := Rung(name, n)
		if slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, rung) }) {
			d.ps.add(p, item, "is listed twice; list each accelerator and count once, smallest first")
			continue
		}
		out = append(out, rung)
	}
	return out
}

// Rung writes one accelerator as an escalation rung: "A100:1".
func Rung(name string, count int) string { return name + ":" + strconv.Itoa(count) }

// ParseRung reads a rung written by Rung.
func ParseRung(s string) (name string, count int) {
	name, c, _ := strings.Cut(s, ":")
	count, err := strconv.Atoi(c)
	if err != nil || count < 1 {
		count = 1
	}
	return name, count
}

// checkEscalate checks job_recovery.escalate against the resources it
// grows: an amount to grow from, a cap above it, the task's accelerator
// among the rungs, and a restart budget to escalate within.
func (d *decoder) checkEscalate(path string, r *Resources, memorySet, cpusSet bool) {
	if r.JobRecovery == nil || r.JobRecovery.Escalate == nil {
		return
	}
	e := r.JobRecovery.Escalate
	ep := join(path, "job_recovery.escalate")
	pinned := r.InstanceType
	for _, c := range append(slices.Clone(r.AnyOf), r.Ordered...) {
		pinned = cmp.Or(pinned, c.InstanceType)
	}
	if pinned != "" {
		// A named machine type is launched as named: the cloud would be
		// asked for the same machine again.
		d.ps.missing(ep, "cannot grow a machine pinned by instance_type %s; ask for cpus, memory or accelerators instead of instance_type", pinned)
	}
	grow := func(field string, f Factor, base, ceiling string, set bool, example string) {
		switch {
		case f != 0 && !set:
			d.ps.missing(join(ep, field), "has no %s to grow from; set resources.%s (e.g. %s), which the first attempt asks for", field, field, example)
		case ceiling != "" && base != "":
			from := strings.TrimSuffix(base, "+")
			b, errB := strconv.ParseFloat(from, 64)
			c, errC := strconv.ParseFloat(ceiling, 64)
			if errB == nil && errC == nil && c < b {
				d.ps.add(join(ep, "max_"+field), ceiling, "is below resources.%s %s; give a limit of %s or more", field, from, from)
			}
		}
	}
	grow("memory", e.Memory, r.Memory, e.MaxMemory, memorySet, "16+")
	grow("cpus", e.CPUs, r.CPUs, e.MaxCPUs, cpusSet, "4+")
	if len(e.Accelerators) > 0 {
		switch {
		case len(r.Accelerators) > 1 || ((len(r.AnyOf) > 0 || len(r.Ordered) > 0) && r.Accelerators == nil && candidatesAskAccelerators(r)):
			d.ps.missing(join(ep, "accelerators"), "climbs from one accelerator, but resources asks for several; give resources.accelerators one of the rungs, or none to start below the first")
		case len(r.Accelerators) == 1:
			for name, n := range r.Accelerators {
				if !slices.ContainsFunc(e.Accelerators, func(rung string) bool { return strings.EqualFold(rung, Rung(name, n)) }) {
					d.ps.missing(join(ep, "accelerators"), "does not list %s, the resources.accelerators the climb starts from; add it to the list in its place, or remove resources.accelerators to start below the first rung", Rung(name, n))
				}
			}
		}
	}
	if r.JobRecovery.MaxRestartsOnErrors < 1 {
		d.ps.missing(join(path, "job_recovery.max_restarts_on_errors"), "is 0, which leaves no restart to escalate with: each escalation is a restart on error; set it to the number of escalations (and other restarts) to allow, e.g. 3")
	}
}

func candidatesAskAccelerators(r *Resources) bool {
	asks := func(c Resources) bool { return c.Accelerators != nil }
	return slices.ContainsFunc(r.AnyOf, asks) || slices.ContainsFunc(r.Ordered, asks)
}

func (e *Escalate) clone() *Escalate {
	if e == nil {
		return nil
	}
	c := *e
	c.OnExitCodes = slices.Clone(e.OnExitCodes)
	c.Accelerators = slices.Clone(e.Accelerators)
	return &c
}
