package schema

import (
	"encoding/json"
	"strconv"
	"strings"
)

// accelSpec is resources.accelerators read: one choice, or alternatives.
// SkyPilot reads a mapping of several ({A100: 1, H100: 1}, or the flow set
// {A100:1, H100:1}, whose keys have null values) as any one of them, and a
// list of several as an ordered preference.
type accelSpec struct {
	choices []map[string]int
	ordered bool
}

// accelerators reads "A100:2", {A100: 2}, {A100:1, H100:1}, {L4, A10g}
// and lists of "NAME:COUNT". Each choice holds one accelerator.
func (d *decoder) accelerators(path string, v any) accelSpec {
	var spec accelSpec
	// The same accelerator at another count is another alternative
	// ({A100:4, A100:8}); only the same name and count is a repeat.
	type choice struct {
		name  string
		count int
	}
	seen := map[choice]bool{}
	add := func(p string, raw any, name string, count int) {
		if seen[choice{name, count}] {
			d.ps.add(p, raw, "is listed twice; list each accelerator and count once")
			return
		}
		seen[choice{name, count}] = true
		spec.choices = append(spec.choices, map[string]int{name: count})
	}
	switch v := v.(type) {
	case nil:
	case string:
		// "{A100:1, H100:1}" quoted is the set SkyPilot reads it as.
		if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			if inner, _, err := decodeYAML(t); err == nil {
				switch inner.(type) {
				case map[string]any, []any:
					return d.accelerators(path, inner)
				}
			}
		}
		if name, n, ok := d.accelerator(path, v); ok {
			add(path, v, name, n)
		}
	case []any:
		spec.ordered = true
		if len(v) == 0 {
			d.ps.add(path, v, `is empty; give one or more accelerators, e.g. ["A100:1", "V100:1"], or remove it`)
		}
		for i, item := range v {
			p := index(path, i)
			switch item := item.(type) {
			case string:
				if name, n, ok := d.accelerator(p, item); ok {
					add(p, item, name, n)
				}
			case map[string]any:
				// - T4: 1, or - V100: (a count of 1), as SkyPilot allows.
				if len(item) != 1 {
					d.ps.add(p, item, `names %d accelerators; write each item as "NAME:COUNT" or {NAME: COUNT}`, len(item))
					continue
				}
				for key, count := range item {
					if name, n, ok := d.entry(join(p, key), key, count); ok {
						add(p, item, name, n)
					}
				}
			default:
				d.ps.add(p, item, `is %s; write each accelerator as "NAME:COUNT"`, typeName(item))
			}
		}
	case map[string]any:
		if len(v) == 0 {
			d.ps.add(path, v, "is empty; give one or more accelerators, e.g. {A100: 1}, or remove it")
		}
		for _, key := range sortedKeys(v) {
			p := join(path, key)
			if name, n, ok := d.entry(p, key, v[key]); ok {
				add(p, v[key], name, n)
			}
		}
	default:
		d.ps.add(path, v, `is %s; write "A100:1", {A100: 1}, a set {A100:1, H100:1} or a list of "NAME:COUNT"`, typeName(v))
	}
	return spec
}

// entry reads one key and value of an accelerator mapping: {A100: 2}, or
// {A100:1: null} and {H100: null}, where the count, if any, is in the key.
func (d *decoder) entry(path, key string, count any) (string, int, bool) {
	if count == nil {
		return d.accelerator(path, key)
	}
	if strings.Contains(key, ":") {
		d.ps.add(path, count, "gives a count twice; write either {%s} or {NAME: COUNT}", key)
		return "", 0, false
	}
	n, ok := d.count(path, count)
	return strings.TrimSpace(key), n, ok
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
	if f, err := strconv.ParseFloat(strings.TrimSpace(count), 64); err == nil && f > 0 && f < 1 {
		d.shares = append(d.shares, share{path: path, value: f})
		return name, 1, true
	}
	n, problem := parseCount(json.Number(strings.TrimSpace(count)))
	if problem != "" {
		d.ps.add(path, s, "has a count that %s", problem)
		return "", 0, false
	}
	return name, n, true
}

// expandAccelerators turns several accelerator choices into candidates,
// one accelerator each: a set becomes any_of, a list ordered. With
// candidates already written, each one that names no accelerator of its
// own is crossed with every choice.
func (d *decoder) expandAccelerators(path, accPath string, r *Resources, accs accelSpec) {
	items, ordered := r.AnyOf, accs.ordered
	switch {
	case len(r.AnyOf) > 0 && accs.ordered:
		d.ps.missing(accPath, "is an ordered list of accelerators, which cannot be combined with any_of; write the accelerators as a set {A100:1, H100:1}, or use %s instead of any_of", join(path, "ordered"))
		return
	case len(r.Ordered) > 0:
		items, ordered = r.Ordered, true
	case len(r.AnyOf) == 0:
		items = []Resources{{}}
	}
	var out []Resources
	for _, item := range items {
		if item.Accelerators != nil {
			out = append(out, item)
			continue
		}
		for _, choice := range accs.choices {
			c := item.clone()
			c.Accelerators = choice
			out = append(out, c)
		}
	}
	r.Accelerators = nil
	if ordered {
		r.AnyOf, r.Ordered = nil, out
	} else {
		r.AnyOf, r.Ordered = out, nil
	}
}
