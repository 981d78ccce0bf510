package schema

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Clouds are the values resources.cloud accepts.
func Clouds() []string { return []string{"local", "sim", "aws", "gcp"} }

func resourceFields(candidate bool) []string {
	f := []string{"cloud", "infra", "region", "zone", "instance_type", "cpus", "memory",
		"accelerators", "use_spot", "disk_size", "image_id"}
	if !candidate {
		f = append(f, "any_of", "ordered", "job_recovery")
	}
	return f
}

func resourceNotes(candidate bool) map[string]string {
	notes := map[string]string{
		"ports":            "ports are not supported; remove it",
		"labels":           "labels are not supported; remove it",
		"disk_tier":        "disk_tier is not supported; remove it",
		"network_tier":     "network_tier is not supported; remove it",
		"accelerator_args": "accelerator_args are not supported; remove it",
		"autostop":         "autostop does not apply to managed jobs; remove it",
	}
	if candidate {
		notes["any_of"] = "candidates cannot nest; list every candidate directly under resources.any_of or resources.ordered"
		notes["ordered"] = notes["any_of"]
		notes["job_recovery"] = "job_recovery applies to the whole task; move it to resources.job_recovery"
	}
	return notes
}

func (d *decoder) resources(path string, v any, candidate bool) Resources {
	var r Resources
	m, ok := d.mapping(path, v, resourceFields(candidate), resourceNotes(candidate))
	if !ok {
		return r
	}
	if c := d.str(join(path, "cloud"), m["cloud"]); c != "" {
		r.Cloud = d.cloud(join(path, "cloud"), c)
	}
	r.Region = d.str(join(path, "region"), m["region"])
	r.Zone = d.str(join(path, "zone"), m["zone"])
	r.Infra = d.str(join(path, "infra"), m["infra"])
	if r.Infra != "" {
		d.infra(join(path, "infra"), &r)
	}
	r.InstanceType = d.str(join(path, "instance_type"), m["instance_type"])
	r.CPUs = d.quantity(join(path, "cpus"), m["cpus"], false)
	r.Memory = d.quantity(join(path, "memory"), m["memory"], true)
	r.Accelerators = d.accelerators(join(path, "accelerators"), m["accelerators"])
	r.UseSpot = d.boolean(join(path, "use_spot"), m["use_spot"])
	if v, present := m["disk_size"]; present {
		if n, ok := d.integer(join(path, "disk_size"), v); ok {
			if n < 1 {
				d.ps.add(join(path, "disk_size"), v, "is too small; give the disk size in GB, 1 or more")
			} else {
				r.DiskSize = n
			}
		}
	}
	if img, ok := m["image_id"].(map[string]any); ok {
		d.ps.add(join(path, "image_id"), img, "is a mapping; per-region images are not supported, give one image id")
	} else {
		r.ImageID = d.str(join(path, "image_id"), m["image_id"])
	}
	if candidate {
		return r
	}
	_, hasAnyOf := m["any_of"]
	_, hasOrdered := m["ordered"]
	if hasAnyOf && hasOrdered {
		d.ps.missing(join(path, "ordered"), "cannot be used with any_of; keep one of them")
	}
	r.AnyOf = d.candidates(join(path, "any_of"), m["any_of"], r)
	r.Ordered = d.candidates(join(path, "ordered"), m["ordered"], r)
	r.JobRecovery = d.jobRecovery(join(path, "job_recovery"), m["job_recovery"])
	return r
}

func (d *decoder) cloud(path, c string) string {
	lc := strings.ToLower(strings.TrimSpace(c))
	if slices.Contains(Clouds(), lc) {
		return lc
	}
	if s := suggest(lc, Clouds()); s != "" {
		d.ps.add(path, c, "is not a cloud sortie supports; did you mean %q?", s)
	} else {
		d.ps.add(path, c, "is not a cloud sortie supports; use one of %s", strings.Join(Clouds(), ", "))
	}
	return ""
}

// infra reads "cloud[/region[/zone]]" ("*" or empty for any part) into r's
// cloud, region and zone; a part that contradicts an explicit field is a
// problem rather than a silent winner.
func (d *decoder) infra(path string, r *Resources) {
	parts := strings.Split(strings.TrimSpace(r.Infra), "/")
	if len(parts) > 3 {
		d.ps.add(path, r.Infra, "has too many parts; write CLOUD, CLOUD/REGION or CLOUD/REGION/ZONE")
		return
	}
	fields := []struct {
		name string
		dst  *string
	}{{"cloud", &r.Cloud}, {"region", &r.Region}, {"zone", &r.Zone}}
	for i, part := range parts {
		part = strings.TrimSpace(part)
		if part == "" || part == "*" {
			continue
		}
		f := fields[i]
		if i == 0 {
			part = d.cloud(path, part)
			if part == "" {
				return
			}
		}
		same := *f.dst == part || (i == 0 && strings.EqualFold(*f.dst, part))
		if *f.dst != "" && !same {
			d.ps.add(path, r.Infra, "conflicts with %s: %q; keep one of them, or make them agree", f.name, *f.dst)
			continue
		}
		*f.dst = part
	}
}

var quantityRE = lazyRegexp(`^(-?(?:\d+(?:\.\d*)?|\.\d+))\s*([A-Za-z]*)\s*(\+?)$`)

// memoryUnits are SkyPilot's size suffixes, as a factor to GB.
func memoryUnits() map[string]float64 {
	return map[string]float64{
		"": 1, "b": 1.0 / (1 << 30),
		"k": 1.0 / (1 << 20), "kb": 1.0 / (1 << 20), "ki": 1.0 / (1 << 20), "kib": 1.0 / (1 << 20),
		"m": 1.0 / (1 << 10), "mb": 1.0 / (1 << 10), "mi": 1.0 / (1 << 10), "mib": 1.0 / (1 << 10),
		"g": 1, "gb": 1, "gi": 1, "gib": 1,
		"t": 1 << 10, "tb": 1 << 10, "ti": 1 << 10, "tib": 1 << 10,
	}
}

// quantity reads cpus or memory: a number, "N" or "N+" (at least N). Memory
// may carry a unit (512MB, 1TB) and is normalised to GB, so "32GB+" and
// "32+" are the same request.
func (d *decoder) quantity(path string, v any, memory bool) string {
	fix := `use a number, or "N+" for at least N`
	if memory {
		fix = `use a size in GB, or "N+" for at least N (units such as 512MB or 1TB also work)`
	}
	var text string
	switch v := v.(type) {
	case nil:
		return ""
	case json.Number:
		text = v.String()
	case string:
		text = strings.TrimSpace(v)
	default:
		d.ps.add(path, v, "is %s; %s", typeName(v), fix)
		return ""
	}
	m := quantityRE().FindStringSubmatch(text)
	if m == nil {
		d.ps.add(path, v, "is not an amount; %s", fix)
		return ""
	}
	n, err := strconv.ParseFloat(m[1], 64)
	factor := 1.0
	if m[2] != "" {
		f, ok := memoryUnits()[strings.ToLower(m[2])]
		if !memory || !ok {
			d.ps.add(path, v, "has an unknown unit %q; %s", m[2], fix)
			return ""
		}
		factor = f
	}
	n *= factor
	if err != nil || n <= 0 || math.IsInf(n, 0) {
		d.ps.add(path, v, "is not more than 0; %s", fix)
		return ""
	}
	return strconv.FormatFloat(n, 'f', -1, 64) + m[3]
}

// accelerators normalises "A100:2", {A100: 2} and lists of the string form
// to name -> count. Several names are alternatives, as in SkyPilot.
func (d *decoder) accelerators(path string, v any) map[string]int {
	out := map[string]int{}
	add := func(p, name string, count int) {
		if _, dup := out[name]; dup {
			d.ps.add(p, name, "is listed twice; list each accelerator once")
			return
		}
		out[name] = count
	}
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if name, n, ok := d.accelerator(path, v); ok {
			add(path, name, n)
		}
	case []any:
		if len(v) == 0 {
			d.ps.add(path, v, `is empty; give one or more accelerators, e.g. ["A100:1", "V100:1"], or remove it`)
		}
		for i, item := range v {
			s, ok := item.(string)
			if !ok {
				d.ps.add(index(path, i), item, `is %s; write each accelerator as "NAME:COUNT"`, typeName(item))
				continue
			}
			if name, n, ok := d.accelerator(index(path, i), s); ok {
				add(index(path, i), name, n)
			}
		}
	case map[string]any:
		if len(v) == 0 {
			d.ps.add(path, v, "is empty; give one or more accelerators, e.g. {A100: 1}, or remove it")
		}
		for _, name := range sortedKeys(v) {
			if n, ok := d.count(join(path, name), v[name]); ok {
				add(join(path, name), name, n)
			}
		}
	default:
		d.ps.add(path, v, `is %s; write "A100:1", {A100: 1} or a list of "NAME:COUNT"`, typeName(v))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (d *decoder) accelerator(path, s string) (string, int, bool) {
	name, count, hasCount := strings.Cut(strings.TrimSpace(s), ":")
	name = strings.TrimSpace(name)
	if name == "" {
		d.ps.add(path, s, `has no accelerator name; write "NAME" or "NAME:COUNT", e.g. "A100:1"`)
		return "", 0, false
	}
	if !hasCount {
		return name, 1, true
	}
	n, problem := parseCount(json.Number(strings.TrimSpace(count)))
	if problem != "" {
		d.ps.add(path, s, "has a count that %s", problem)
		return "", 0, false
	}
	return name, n, true
}

func (d *decoder) count(path string, v any) (int, bool) {
	num, ok := v.(json.Number)
	if !ok {
		d.ps.add(path, v, "is %s; give a whole count of 1 or more", typeName(v))
		return 0, false
	}
	n, problem := parseCount(num)
	if problem != "" {
		d.ps.add(path, v, "%s", problem)
		return 0, false
	}
	return n, true
}

// parseCount reads an accelerator count, or says what is wrong with it.
func parseCount(num json.Number) (int, string) {
	f, err := num.Float64()
	switch {
	case err != nil:
		return 0, "is not a number; give a whole count of 1 or more"
	case f != math.Trunc(f):
		return 0, "is a fraction; fractional accelerators are not supported, give a whole count of 1 or more"
	case f < 1 || f > math.MaxInt32:
		return 0, "is out of range; give a whole count of 1 or more"
	}
	return int(f), ""
}

func (d *decoder) candidates(path string, v any, base Resources) []Resources {
	if v == nil {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		d.ps.add(path, v, "is %s; expected a list of candidate resources, e.g. [{region: us-east-1}, {region: us-west-2}]", typeName(v))
		return nil
	}
	if len(items) == 0 {
		d.ps.add(path, v, "is empty; list at least one candidate, or remove it")
		return nil
	}
	out := make([]Resources, len(items))
	for i, item := range items {
		p := index(path, i)
		out[i] = d.resources(p, item, true)
		// The typed field cannot tell "use_spot: false" from unset, so a
		// candidate cannot take spot away from the base; say so rather than
		// ignore it.
		if m, ok := item.(map[string]any); ok && m["use_spot"] == false && base.UseSpot {
			d.ps.add(join(p, "use_spot"), false, "cannot override use_spot: true of resources; set use_spot in each candidate instead")
		}
	}
	return out
}

func strategies() []string { return []string{string(Failover), string(EagerNextRegion)} }

func (d *decoder) jobRecovery(path string, v any) *JobRecovery {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return &JobRecovery{Strategy: d.strategy(path, v)}
	case map[string]any:
	default:
		d.ps.add(path, v, "is %s; give a strategy (FAILOVER or EAGER_NEXT_REGION) or a mapping with strategy, max_restarts_on_errors, recover_on_exit_codes", typeName(v))
		return nil
	}
	m, _ := d.mapping(path, v, []string{"strategy", "max_restarts_on_errors", "recover_on_exit_codes"}, nil)
	jr := &JobRecovery{}
	if s := d.str(join(path, "strategy"), m["strategy"]); s != "" {
		jr.Strategy = d.strategy(join(path, "strategy"), s)
	}
	if raw, present := m["max_restarts_on_errors"]; present {
		p := join(path, "max_restarts_on_errors")
		if n, ok := d.integer(p, raw); ok {
			if n < 0 {
				d.ps.add(p, raw, "is negative; use 0 or more (0: a failure with an unlisted exit code ends the job)")
			} else {
				jr.MaxRestartsOnErrors = n
			}
		}
	}
	jr.RecoverOnExitCodes = d.exitCodes(join(path, "recover_on_exit_codes"), m["recover_on_exit_codes"])
	return jr
}

func (d *decoder) strategy(path, s string) Strategy {
	up := strings.ToUpper(strings.TrimSpace(s))
	if slices.Contains(strategies(), up) {
		return Strategy(up)
	}
	if sug := suggest(up, strategies()); sug != "" {
		d.ps.add(path, s, "is not a recovery strategy; did you mean %q?", sug)
	} else {
		d.ps.add(path, s, "is not a recovery strategy; use FAILOVER or EAGER_NEXT_REGION")
	}
	return ""
}

// exitCodes reads one code or a list of distinct codes, each 0..255.
func (d *decoder) exitCodes(path string, v any) []int {
	var items []any
	var paths []string
	switch v := v.(type) {
	case nil:
		return nil
	case json.Number:
		items, paths = []any{v}, []string{path}
	case []any:
		items = v
		for i := range v {
			paths = append(paths, index(path, i))
		}
	default:
		d.ps.add(path, v, "is %s; give an exit code or a list of them, e.g. [29, 137]", typeName(v))
		return nil
	}
	var codes []int
	for i, item := range items {
		if _, isNum := item.(json.Number); !isNum {
			d.ps.add(paths[i], item, "is %s; an exit code is a whole number from 0 to 255", typeName(item))
			continue
		}
		n, ok := d.integer(paths[i], item)
		if !ok {
			continue
		}
		switch {
		case n < 0 || n > 255:
			d.ps.add(paths[i], item, "is not an exit code (0-255)")
		case slices.Contains(codes, n):
			d.ps.add(paths[i], item, "is listed twice; list each exit code once")
		default:
			codes = append(codes, n)
		}
	}
	return codes
}
