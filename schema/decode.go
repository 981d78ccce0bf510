package schema

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
)

// The decoder walks a document already turned into JSON values
// (map[string]any, []any, string, json.Number, bool, nil) and fills the
// typed structs, recording a Problem for everything wrong instead of
// stopping at the first. Decoding by hand, rather than with strict
// unmarshalling into the structs, is what allows SkyPilot's several shapes
// per field and a complete list of problems.

func taskFields() []string {
	return []string{"name", "resources", "num_nodes", "workdir", "file_mounts", "envs", "secrets", "setup", "run"}
}

// skypilotTaskFields are task fields SkyPilot knows that sortie does not
// run; naming them beats "unknown field" for someone bringing a SkyPilot file.
func skypilotTaskFields() map[string]string {
	return map[string]string{
		"service":        "SkyPilot's serving section is not supported; remove it",
		"config":         "per-task SkyPilot config is not supported; remove it",
		"volumes":        "volumes are not supported; use file_mounts",
		"event_callback": "event callbacks are not supported; remove it",
		"inputs":         "SkyPilot's inputs (for its optimizer) are not supported; remove it",
		"outputs":        "SkyPilot's outputs (for its optimizer) are not supported; remove it",
	}
}

// aliases map names people reach for to the field sortie calls them.
func aliases() map[string]string {
	return map[string]string{
		"gpus":          "accelerators",
		"gpu":           "accelerators",
		"spot_recovery": "job_recovery",
		"recovery":      "job_recovery",
		"env":           "envs",
		"command":       "run",
		"nodes":         "num_nodes",
	}
}

var envName = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)

type decoder struct {
	ps *problems
}

// mapping checks that v is a mapping (null counts as an empty one) and
// reports every key outside known. notes replace "unknown field" for keys
// with a more useful explanation.
func (d *decoder) mapping(path string, v any, known []string, notes map[string]string) (map[string]any, bool) {
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
		d.unknown(join(path, k), k, known, notes)
	}
	return m, true
}

func (d *decoder) unknown(path, key string, known []string, notes map[string]string) {
	if note, ok := notes[key]; ok {
		d.ps.missing(path, "%s", note)
		return
	}
	if alias, ok := aliases()[strings.ToLower(key)]; ok && slices.Contains(known, alias) {
		d.ps.missing(path, "unknown field; did you mean %q?", alias)
		return
	}
	if s := suggest(key, known); s != "" {
		d.ps.missing(path, "unknown field; did you mean %q?", s)
		return
	}
	d.ps.missing(path, "unknown field; expected one of %s", strings.Join(known, ", "))
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

// decodeTask decodes one task document; path is "" or "tasks[N]".
func decodeTask(ps *problems, path string, raw any) *Task {
	d := &decoder{ps: ps}
	m, ok := d.mapping(path, raw, taskFields(), skypilotTaskFields())
	if !ok {
		return nil
	}
	t := &Task{}
	t.Name = d.str(join(path, "name"), m["name"])
	t.Resources = d.resources(join(path, "resources"), m["resources"], false)
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
	if v, ok := m["workdir"].(map[string]any); ok {
		d.ps.add(join(path, "workdir"), v, "is a mapping; a git workdir is not supported, give a local directory")
	} else {
		t.Workdir = d.str(join(path, "workdir"), m["workdir"])
	}
	t.FileMounts = d.fileMounts(join(path, "file_mounts"), m["file_mounts"])
	t.Envs = d.envs(join(path, "envs"), m["envs"])
	t.Secrets = d.secrets(join(path, "secrets"), m["secrets"])
	t.Setup = d.str(join(path, "setup"), m["setup"])
	run, present := m["run"]
	t.Run = d.str(join(path, "run"), run)
	switch {
	case !present || run == nil:
		ps.missing(join(path, "run"), "missing; give the command the task runs, e.g. run: python train.py")
	case t.Run != "" && strings.TrimSpace(t.Run) == "":
		ps.add(join(path, "run"), t.Run, "is blank; give the command the task runs")
	case t.Run == "":
		if _, isString := run.(string); isString {
			ps.add(join(path, "run"), run, "is empty; give the command the task runs")
		}
	}
	return t
}

func (d *decoder) fileMounts(path string, v any) map[string]string {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.ps.add(path, v, "is %s; expected a mapping of remote path to local path or bucket URL", typeName(v))
		return nil
	}
	out := make(map[string]string, len(m))
	for _, dst := range sortedKeys(m) {
		p := join(path, dst)
		if strings.TrimSpace(dst) == "" {
			d.ps.missing(p, "has an empty remote path; give the path on the node")
			continue
		}
		switch src := m[dst].(type) {
		case string:
			if strings.TrimSpace(src) == "" {
				d.ps.add(p, src, "is empty; give a local path or a bucket URL")
				continue
			}
			out[dst] = src
		case map[string]any:
			d.ps.add(p, src, "is a storage mount, which is not supported; give a local path or a bucket URL")
		case nil:
			d.ps.missing(p, "has no source; give a local path or a bucket URL")
		default:
			d.ps.add(p, src, "is %s; give a local path or a bucket URL", typeName(src))
		}
	}
	return out
}

// scalarString turns a YAML scalar into the string SkyPilot would pass on:
// it applies Python's str() to numbers and booleans, so true becomes "True".
func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		if v {
			return "True", true
		}
		return "False", true
	}
	return "", false
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

func (d *decoder) envs(path string, v any) map[string]string {
	m, ok := d.varNames(path, v, "value")
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if m[k] == nil {
			d.ps.missing(join(path, k), "has no value; give one, or declare it under secrets to take it from the environment at launch")
			continue
		}
		s, ok := scalarString(m[k])
		if !ok {
			d.ps.add(join(path, k), m[k], "is %s; give a string", typeName(m[k]))
			continue
		}
		out[k] = s
	}
	return out
}

func (d *decoder) secrets(path string, v any) map[string]*string {
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
		out[k] = &s
	}
	return out
}
