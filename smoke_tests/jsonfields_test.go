package smoke_tests

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The README's "## JSON output" section documents each object of `-o json`
// under a "### `name`" heading, with a table of its fields:
//
//	| field | type | meaning |
//	|---|---|---|
//	| `started_at`, `ended_at` | time\|null | ... |
//
// A first cell may name several fields of one type. Types are int, string,
// time (an RFC 3339 string in UTC), null, [T] (a list of T), A|B (either) and
// the name of another documented object. The `show` object is a `job` with
// its own fields added, as the README says.

// jsonObject is one documented object: its fields in README order, and the
// type of each.
type jsonObject struct {
	name   string
	fields []string
	types  map[string]jsonType
}

// jsonType is a README type: the value may match any of the alternatives.
type jsonType []jsonAlt

type jsonAlt struct {
	kind string   // null, int, string, time, list or object
	elem jsonType // a list's items
	obj  string   // an object's name
}

func (t jsonType) String() string {
	var parts []string
	for _, a := range t {
		switch a.kind {
		case "list":
			parts = append(parts, "["+a.elem.String()+"]")
		case "object":
			parts = append(parts, a.obj)
		default:
			parts = append(parts, a.kind)
		}
	}
	return strings.Join(parts, "|")
}

func (t jsonType) has(kind string) bool {
	for _, a := range t {
		if a.kind == kind {
			return true
		}
	}
	return false
}

func (t jsonType) alt(kind string) (jsonAlt, bool) {
	for _, a := range t {
		if a.kind == kind {
			return a, true
		}
	}
	return jsonAlt{}, false
}

// contractObjects are the objects the contract test needs the README to document.
var contractObjects = []string{"job", "override", "show", "task", "task_ref", "attempt", "launch_try", "plan", "plan_task", "placement", "repo", "mount"}

var backticked = regexp.MustCompile("`([^`]+)`")

// readJSONSchema parses the README's field tables.
func readJSONSchema(t *testing.T, readme string) map[string]*jsonObject {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseJSONSchema(string(b))
	if err != nil {
		t.Fatalf("%s: %v", readme, err)
	}
	return objs
}

func parseJSONSchema(text string) (map[string]*jsonObject, error) {
	lines := strings.Split(text, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "## JSON output" {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf(`no "## JSON output" section`)
	}
	objs := map[string]*jsonObject{}
	var cur *jsonObject
	for n, l := range lines[start:] {
		lineNo := start + n + 1
		if strings.HasPrefix(l, "## ") {
			break
		}
		if strings.HasPrefix(l, "### ") {
			cur = nil
			if m := backticked.FindStringSubmatch(l); m != nil {
				if objs[m[1]] != nil {
					return nil, fmt.Errorf("line %d: object %s documented twice", lineNo, m[1])
				}
				cur = &jsonObject{name: m[1], types: map[string]jsonType{}}
				objs[m[1]] = cur
			}
			continue
		}
		if !strings.HasPrefix(strings.TrimSpace(l), "|") {
			continue
		}
		cells := tableCells(l)
		if len(cells) < 2 || cells[0] == "field" || strings.Trim(cells[0], "-: ") == "" {
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("line %d: a field table outside a \"### `object`\" heading", lineNo)
		}
		names := backticked.FindAllStringSubmatch(cells[0], -1)
		if len(names) == 0 {
			return nil, fmt.Errorf("line %d: no `field` in %q", lineNo, cells[0])
		}
		typ, err := parseJSONType(cells[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", lineNo, err)
		}
		for _, m := range names {
			if _, dup := cur.types[m[1]]; dup {
				return nil, fmt.Errorf("line %d: %s.%s documented twice", lineNo, cur.name, m[1])
			}
			cur.fields = append(cur.fields, m[1])
			cur.types[m[1]] = typ
		}
	}
	for _, name := range contractObjects {
		if objs[name] == nil || len(objs[name].fields) == 0 {
			return nil, fmt.Errorf("the JSON output section documents no fields of `%s`", name)
		}
	}
	// `show` prints a job with its own fields added.
	show, job := objs["show"], objs["job"]
	merged := &jsonObject{name: "show", types: map[string]jsonType{}}
	for _, o := range []*jsonObject{job, show} {
		for _, f := range o.fields {
			if _, dup := merged.types[f]; dup {
				return nil, fmt.Errorf("show.%s is already a field of job", f)
			}
			merged.fields = append(merged.fields, f)
			merged.types[f] = o.types[f]
		}
	}
	objs["show"] = merged
	for _, o := range objs {
		for _, f := range o.fields {
			if err := checkObjectRefs(o.types[f], objs); err != nil {
				return nil, fmt.Errorf("%s.%s: %v", o.name, f, err)
			}
		}
	}
	return objs, nil
}

// tableCells splits a Markdown table row on its unescaped pipes.
func tableCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var objectName = regexp.MustCompile(`^[a-z][a-z_]*$`)

func parseJSONType(s string) (jsonType, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	if s == "" {
		return nil, fmt.Errorf("empty type")
	}
	var alts []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("type %q: unbalanced ]", s)
			}
		case '|':
			if depth == 0 {
				alts = append(alts, s[from:i])
				from = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("type %q: unbalanced [", s)
	}
	alts = append(alts, s[from:])
	var t jsonType
	for _, a := range alts {
		switch {
		case a == "null" || a == "int" || a == "string" || a == "time" || a == "bool":
			t = append(t, jsonAlt{kind: a})
		case strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]"):
			elem, err := parseJSONType(a[1 : len(a)-1])
			if err != nil {
				return nil, err
			}
			t = append(t, jsonAlt{kind: "list", elem: elem})
		case objectName.MatchString(a):
			t = append(t, jsonAlt{kind: "object", obj: a})
		default:
			return nil, fmt.Errorf("type %q: cannot read %q", s, a)
		}
	}
	kinds := map[string]bool{}
	for _, a := range t {
		k := a.kind
		if k == "time" {
			k = "string"
		}
		if kinds[k] {
			return nil, fmt.Errorf("type %q: two alternatives of one JSON kind", s)
		}
		kinds[k] = true
	}
	return t, nil
}

func checkObjectRefs(t jsonType, objs map[string]*jsonObject) error {
	for _, a := range t {
		switch a.kind {
		case "object":
			if objs[a.obj] == nil {
				return fmt.Errorf("type %s names no documented object", a.obj)
			}
		case "list":
			if err := checkObjectRefs(a.elem, objs); err != nil {
				return err
			}
		}
	}
	return nil
}

// conformer holds output to the README: every object has exactly the
// documented fields, every value the documented type. It returns each value
// normalised for golden files (times and the fields in masks replaced by
// placeholders of the same JSON type) and gathers the mismatches.
type conformer struct {
	objs  map[string]*jsonObject
	masks map[string]string // field name → placeholder for its strings
	probs map[string]*problem
}

type problem struct {
	first string // path of the first value with the problem
	count int
}

func newConformer(objs map[string]*jsonObject, masks map[string]string) *conformer {
	return &conformer{objs: objs, masks: masks, probs: map[string]*problem{}}
}

func (c *conformer) fail(path, msg string) {
	p := c.probs[msg]
	if p == nil {
		p = &problem{first: path}
		c.probs[msg] = p
	}
	p.count++
}

// report fails the test with each problem once, where it was first seen and
// how often.
func (c *conformer) report(t *testing.T) {
	t.Helper()
	msgs := make([]string, 0, len(c.probs))
	for m := range c.probs {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		p := c.probs[m]
		t.Errorf("%s (at %s; %d times)", m, p.first, p.count)
	}
}

// conform checks v, found at path and documented as where, against typ.
func (c *conformer) conform(path, where string, v any, typ jsonType) any {
	switch x := v.(type) {
	case nil:
		if !typ.has("null") {
			c.fail(path, fmt.Sprintf("%s: null, README says %s", where, typ))
		}
		return nil
	case json.Number:
		if !typ.has("int") {
			c.fail(path, fmt.Sprintf("%s: number %s, README says %s", where, x, typ))
		} else if _, err := strconv.ParseInt(x.String(), 10, 64); err != nil {
			c.fail(path, fmt.Sprintf("%s: %s is not an int", where, x))
		}
		return x
	case bool:
		if !typ.has("bool") {
			c.fail(path, fmt.Sprintf("%s: bool, README says %s", where, typ))
		}
		return x
	case string:
		if typ.has("time") {
			ts, err := time.Parse(time.RFC3339Nano, x)
			switch {
			case err != nil:
				c.fail(path, fmt.Sprintf("%s: %q is not an RFC 3339 time", where, x))
			case ts.Location() != time.UTC:
				c.fail(path, fmt.Sprintf("%s: %q is not in UTC", where, x))
			}
			return "<time>"
		}
		if !typ.has("string") {
			c.fail(path, fmt.Sprintf("%s: string, README says %s", where, typ))
		}
		return x
	case []any:
		a, ok := typ.alt("list")
		if !ok {
			c.fail(path, fmt.Sprintf("%s: list, README says %s", where, typ))
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = c.conform(fmt.Sprintf("%s[%d]", path, i), where+"[]", e, a.elem)
		}
		return out
	case map[string]any:
		a, ok := typ.alt("object")
		if !ok {
			c.fail(path, fmt.Sprintf("%s: object, README says %s", where, typ))
			return x
		}
		return c.object(path, x, c.objs[a.obj])
	default:
		c.fail(path, fmt.Sprintf("%s: unexpected %T", where, v))
		return v
	}
}

func (c *conformer) object(path string, m map[string]any, o *jsonObject) any {
	out := map[string]any{}
	for _, f := range o.fields {
		v, ok := m[f]
		if !ok {
			c.fail(path, fmt.Sprintf("%s: field %q is documented in README.md but missing from the output", o.name, f))
			continue
		}
		out[f] = c.mask(f, c.conform(path+"."+f, o.name+"."+f, v, o.types[f]))
	}
	for f, v := range m {
		if _, ok := o.types[f]; !ok {
			c.fail(path, fmt.Sprintf("%s: field %q is in the output but not documented in README.md", o.name, f))
			out[f] = v
		}
	}
	return out
}

// mask replaces the strings of a volatile field (or of its list) by its
// placeholder, keeping null as null.
func (c *conformer) mask(field string, v any) any {
	ph, ok := c.masks[field]
	if !ok {
		return v
	}
	switch x := v.(type) {
	case string:
		return ph
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = c.mask(field, e)
		}
		return out
	}
	return v
}

func TestContractREADMEParser(t *testing.T) {
	if got := tableCells("| `a`, `b` | [int\\|null]\\|null | x |"); fmt.Sprint(got) != "[`a`, `b` [int|null]|null x]" {
		t.Errorf("cells: %q", got)
	}
	for in, want := range map[string]string{
		"int":               "int",
		"[int|null]|null":   "[int|null]|null",
		"[[job]] | null":    "[[job]]|null",
		"time|null":         "time|null",
		"[override]|null":   "[override]|null",
		"string|time":       "error",
		"[int":              "error",
		"{path,old,new}":    "error",
		"int||null":         "error",
		"[job]]|null[":      "error",
		"launch_try|null|x": "error",
	} {
		typ, err := parseJSONType(in)
		got := typ.String()
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("parseJSONType(%q) = %s (%v), want %s", in, got, err, want)
		}
	}
	readme := "## JSON output\n\n| `stray` | int | x |\n"
	if _, err := parseJSONSchema(readme); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("a table outside an object heading: %v", err)
	}
	readme = "## JSON output\n\n### `job`\n\n| field | type | meaning |\n|---|---|---|\n| `id` | int | |\n| `id` | int | |\n"
	if _, err := parseJSONSchema(readme); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a field documented twice: %v", err)
	}
	objs := readJSONSchema(t, "../README.md")
	if show, job := objs["show"], objs["job"]; len(show.fields) <= len(job.fields) || show.fields[0] != job.fields[0] {
		t.Errorf("show does not extend job: %v", show.fields)
	}
}
