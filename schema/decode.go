package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The decoder walks a document already turned into JSON values
// (map[string]any, []any, string, json.Number, bool, nil) and fills the
// typed structs, recording a Problem for everything wrong instead of
// stopping at the first. Decoding by hand, rather than with strict
// unmarshalling into the structs, is what allows SkyPilot's several shapes
// per field and a complete list of problems.

func taskFields() []string {
	return []string{"name", "resources", "num_nodes", "workdir", "file_mounts", "envs", "secrets", "setup", "run", "notify", "priority"}
}

// ignoredTaskFields are SkyPilot task fields that mean nothing to a
// managed job sortie runs: accepted, with this warning.
func ignoredTaskFields() map[string]string {
	return map[string]string{
		"service":              "ignored: SkyServe's service section does not apply to a managed job, which runs the task once with no replicas or endpoint",
		"event_callback":       "ignored: sortie runs no event callback",
		"inputs":               "ignored: a size hint for SkyPilot's optimizer, which sortie does not have",
		"outputs":              "ignored: a size hint for SkyPilot's optimizer, which sortie does not have",
		"file_mounts_mapping":  "ignored: SkyPilot writes it when it hands a task to its own controller",
		"api_server_access":    "ignored: sortie has no API server for a task to reach",
		"_metadata":            "ignored: SkyPilot's internal metadata",
		"_user_specified_yaml": "ignored: SkyPilot's internal copy of the task file",
	}
}

// refusedTaskFields are SkyPilot task fields naming features sortie
// lacks: a task using them cannot run as its author meant.
func refusedTaskFields() map[string]string {
	return map[string]string{
		"pool":            "SkyPilot pools are not supported: sortie launches a cluster for each job; remove pool",
		"volumes":         "SkyPilot volumes are not supported; copy the data with file_mounts instead",
		"volume_mounts":   "SkyPilot volumes are not supported; copy the data with file_mounts instead",
		"job_recovery":    "belongs under resources, as in SkyPilot; move it to resources.job_recovery",
		"managed_secrets": "SkyPilot's managed secrets are not supported; list each name under secrets with a null value to take it from the environment at launch",
	}
}

// aliases map names people reach for to the field sortie calls them.
func aliases() map[string]string {
	return map[string]string{
		"gpu":      "accelerators",
		"recovery": "job_recovery",
		"env":      "envs",
		"command":  "run",
		"nodes":    "num_nodes",
	}
}

var envName = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)

type decoder struct {
	ps *problems
	// warnings collects one line per field accepted but ignored.
	warnings *[]string
	// filled is set when ${VAR} must not be substituted again.
	filled bool
	// clouds are the clouds the file may name.
	clouds Clouds
	// shares are the fractional accelerator counts read since the
	// resources being read began (resources takes them).
	shares []share
}

// warn records a field that is accepted and ignored.
func (d *decoder) warn(path, format string, args ...any) {
	if d.warnings == nil {
		return
	}
	*d.warnings = append(*d.warnings, path+": "+fmt.Sprintf(format, args...))
}

// fieldRules say what happens to keys outside a mapping's known fields:
// ignored ones are warned about, refused ones get their own message, the
// rest are unknown.
type fieldRules struct {
	ignored map[string]string
	refused map[string]string
}

// mapping checks that v is a mapping (null counts as an empty one) and
// reports every key outside known. notes replace "unknown field" for keys
// with a more useful explanation.
func (d *decoder) mapping(path string, v any, known []string, notes map[string]string) (map[string]any, bool) {
	return d.mappingWith(path, v, known, fieldRules{refused: notes})
}

// mappingWith is mapping with warnings for ignored keys as well.
func (d *decoder) mappingWith(path string, v any, known []string, rules fieldRules) (map[string]any, bool) {
	if v == nil {
		return map[string]any{}, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.ps.add(path, v, "is %s; expected a mapping of %s", typeName(v), strings.Join(known, ", "))
		return nil, false
	}
	for _, k := range sortedKeys(m) {
		if slices.Contains(known, k) {
			continue
		}
		if msg, ok := rules.ignored[k]; ok {
			d.warn(join(path, k), "%s", msg)
			continue
		}
		d.unknown(join(path, k), k, known, rules.refused)
	}
	return m, true
}

func (d *decoder) unknown(path, key string, known []string, notes map[string]string) {
	if note, ok := notes[key]; ok {
		d.ps.missing(path, "%s", note)
		return
	}
	d.ps.list = append(d.ps.list, UnknownField(path, key, known))
}

// str reads a string field; null is the empty string.
func (d *decoder) str(path string, v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number, bool:
		d.ps.add(path, v, "is %s; quote it to make it a string", typeName(v))
	default:
		d.ps.add(path, v, "is %s; expected a string", typeName(v))
	}
	return ""
}

// integer reads a whole number; ok is false when v is null or not one.
func (d *decoder) integer(path string, v any) (n int, ok bool) {
	switch v := v.(type) {
	case nil:
		return 0, false
	case json.Number:
		if i, err := v.Int64(); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
			return int(i), true
		}
		if f, err := v.Float64(); err == nil && f == math.Trunc(f) {
			d.ps.add(path, v, "is out of range")
		} else {
			d.ps.add(path, v, "is not a whole number")
		}
	default:
		d.ps.add(path, v, "is %s; expected a whole number", typeName(v))
	}
	return 0, false
}

func (d *decoder) boolean(path string, v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	}
	d.ps.add(path, v, "is %s; use true or false", typeName(v))
	return false
}

// task decodes one task document; path is "" or "tasks[N]".
func (d *decoder) task(path string, raw any) *Task {
	// config and experimental are read below, to warn about each key.
	known := append(taskFields(), "config", "experimental")
	m, ok := d.mappingWith(path, raw, known, fieldRules{ignored: ignoredTaskFields(), refused: refusedTaskFields()})
	if !ok {
		return nil
	}
	t := &Task{}
	t.Name = d.str(join(path, "name"), m["name"])
	resRaw := m["resources"]
	if rm, ok := resRaw.(map[string]any); ok {
		if v, present := rm["priority"]; present {
			// SkyPilot's place for it: read as the top-level one is.
			rm = maps.Clone(rm)
			delete(rm, "priority")
			resRaw = rm
			t.Priority = d.priority(join(path, "resources.priority"), v)
		}
	}
	t.Resources = d.resources(join(path, "resources"), resRaw, false)
	if v, present := m["num_nodes"]; present {
		p := join(path, "num_nodes")
		if n, ok := d.integer(p, v); ok {
			if n < 1 {
				d.ps.add(p, v, "is less than 1; a task runs on at least one node")
			} else {
				t.NumNodes = n
			}
		}
	}
	t.Envs, t.RequiredEnvs = d.envs(join(path, "envs"), m["envs"])
	t.Secrets = d.secrets(join(path, "secrets"), m["secrets"])
	vars := fillVars{envs: t.Envs, secrets: t.Secrets}
	t.Workdir, t.WorkdirRepo = d.workdir(join(path, "workdir"), m["workdir"], vars)
	t.FileMounts, t.StorageMounts = d.fileMounts(join(path, "file_mounts"), m["file_mounts"], vars)
	t.Setup = d.str(join(path, "setup"), m["setup"])
	// No run is a setup-only task, as in SkyPilot: it succeeds when its
	// setup does.
	t.Run = d.str(join(path, "run"), m["run"])
	if v, present := m["notify"]; present {
		t.Notify = d.notify(join(path, "notify"), v)
	}
	if v, present := m["priority"]; present {
		p := join(path, "priority")
		top := d.priority(p, v)
		switch {
		case t.Priority != nil && top != nil && *top != *t.Priority:
			d.ps.add(p, v, "differs from resources.priority, %d; give the priority once", *t.Priority)
		case top != nil:
			t.Priority = top
		}
	}
	if v, present := m["config"]; present {
		d.config(join(path, "config"), v)
	}
	if v, present := m["experimental"]; present {
		d.experimental(join(path, "experimental"), v)
	}
	return t
}

// priority reads a job's priority, 0 to 1000; nil for none (null) or a
// bad one, recorded.
func (d *decoder) priority(path string, v any) *int {
	if v == nil {
		return nil
	}
	n, ok := d.integer(path, v)
	if !ok {
		return nil
	}
	if n < MinPriority || n > MaxPriority {
		d.ps.add(path, v, "is not a priority; use a whole number from %d (lowest) to %d (highest); the default is %d", MinPriority, MaxPriority, DefaultPriority)
		return nil
	}
	return &n
}

// config warns about each key of SkyPilot's per-task config, none of
// which sortie uses: its own settings live in its config.yaml.
func (d *decoder) config(path string, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		if v != nil {
			d.ps.add(path, v, "is %s; expected a mapping of SkyPilot config keys", typeName(v))
		}
		return
	}
	for _, k := range sortedKeys(m) {
		d.warn(join(path, k), "ignored: sortie does not use SkyPilot's %s config", k)
	}
}

// experimental is SkyPilot's older spelling of config:
// experimental.config_overrides.
func (d *decoder) experimental(path string, v any) {
	m, ok := d.mapping(path, v, []string{"config_overrides"}, nil)
	if !ok {
		return
	}
	if co, present := m["config_overrides"]; present {
		d.config(join(path, "config_overrides"), co)
	}
}

// scalarString turns a YAML scalar into the string SkyPilot would pass on:
// it applies Python's str() to numbers and booleans, so true becomes "True"
// and 1.50 becomes "1.5".
func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return pythonNumber(v.String()), true
	case bool:
		if v {
			return "True", true
		}
		return "False", true
	}
	return "", false
}

// yaml11Float is a float as PyYAML reads one: it needs a dot, and an
// exponent needs a sign; other number-like text (1e3) is a string there,
// kept as written.
var yaml11Float = lazyRegexp(`^[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)?$`)

// pythonNumber writes a number as Python's str() does: integers as they
// are, floats in Python's shortest form (1.50 is 1.5, 100. is 100.0,
// 0.00001 is 1e-05).
func pythonNumber(text string) string {
	if !yaml11Float().MatchString(text) {
		return text
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return text
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expText)
	if exp >= -4 && exp < 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	sign := "+"
	if exp < 0 {
		sign, exp = "-", -exp
	}
	return fmt.Sprintf("%se%s%02d", mant, sign, exp)
}

func (d *decoder) varNames(path string, v any, what string) (map[string]any, bool) {
	if v == nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.ps.add(path, v, "is %s; expected a mapping of name to %s", typeName(v), what)
		return nil, false
	}
	for _, k := range sortedKeys(m) {
		if !envName().MatchString(k) {
			d.ps.missing(join(path, k), "is not a valid variable name; use letters, digits and _, not starting with a digit")
		}
	}
	return m, true
}

// envs reads the task's variables. A null value is SkyPilot's "required
// at launch": its name goes to required, for --env to fill.
func (d *decoder) envs(path string, v any) (vals map[string]string, required []string) {
	m, ok := d.varNames(path, v, "value")
	if !ok {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if m[k] == nil {
			required = append(required, k)
			continue
		}
		s, ok := scalarString(m[k])
		if !ok {
			d.ps.add(join(path, k), m[k], "is %s; give a string", typeName(m[k]))
			continue
		}
		if strings.ContainsRune(s, 0) {
			d.ps.missing(join(path, k), "holds a NUL byte, which no environment variable can carry; remove it")
			continue
		}
		out[k] = s
	}
	return out, required
}

func (d *decoder) secrets(path string, v any) map[string]*string {
	if _, isList := v.([]any); isList {
		d.ps.missing(path, "is a list of SkyPilot managed secret references, which are not supported; give a mapping of name to value, or to null to take it from the environment at launch")
		return nil
	}
	if _, isMap := v.(map[string]any); v != nil && !isMap {
		// What is there may be the secret itself: name its kind only.
		d.ps.missing(path, "is %s; expected a mapping of name to value or null", typeName(v))
		return nil
	}
	m, ok := d.varNames(path, v, "value or null")
	if !ok {
		return nil
	}
	out := make(map[string]*string, len(m))
	for _, k := range sortedKeys(m) {
		if m[k] == nil {
			out[k] = nil
			continue
		}
		s, ok := scalarString(m[k])
		if !ok {
			// The value itself is secret: name its kind, never echo it.
			d.ps.missing(join(path, k), "is %s; give a string, or null to take it from the environment at launch", typeName(m[k]))
			continue
		}
		if strings.ContainsRune(s, 0) {
			d.ps.missing(join(path, k), "holds a NUL byte, which no environment variable can carry; remove it")
			continue
		}
		out[k] = &s
	}
	return out
}
