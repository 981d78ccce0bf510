package smoke_tests

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/controller/api"
)

// The JSON contract is the OpenAPI document the server serves at
// /v1/openapi.json (api.OpenAPI): its components hold a JSON schema for
// every answer object, made from the Go types of package
// controller/contract, which `-o json` prints too. The tests hold the
// CLI's and the API's output to those schemas.

// openAPI is the OpenAPI document, decoded.
type openAPI struct {
	doc     map[string]any
	schemas map[string]any // components.schemas, by name
}

const schemaRefPrefix = "#/components/schemas/"

// loadOpenAPI decodes api.OpenAPI, the document the server serves.
func loadOpenAPI(t *testing.T) *openAPI {
	t.Helper()
	o, err := parseOpenAPI(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func parseOpenAPI(b []byte) (*openAPI, error) {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("the OpenAPI document: %w", err)
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	if len(schemas) == 0 {
		return nil, fmt.Errorf("the OpenAPI document has no components.schemas")
	}
	for _, name := range contractObjects {
		if _, ok := schemas[name].(map[string]any); !ok {
			return nil, fmt.Errorf("the OpenAPI document has no schema %s", name)
		}
	}
	return &openAPI{doc: doc, schemas: schemas}, nil
}

// contractObjects are the schemas the contract tests hold output to.
var contractObjects = []string{"job", "show", "size", "override", "task", "task_ref", "attempt", "notice", "launch_try",
	"notification", "storage", "plan", "plan_task", "escalate_plan", "placement", "repo", "mount", "failure", "release",
	"retry_result", "me", "log_event"}

// ref is a reference to the schema called name.
func ref(name string) map[string]any { return map[string]any{"$ref": schemaRefPrefix + name} }

// listOf is the schema of a list of s.
func listOf(s map[string]any) map[string]any { return map[string]any{"type": "array", "items": s} }

// answer is the schema of what route ("GET /v1/jobs") answers with status
// and content type ct.
func (o *openAPI) answer(route, status, ct string) (map[string]any, error) {
	method, path, _ := strings.Cut(route, " ")
	paths, _ := o.doc["paths"].(map[string]any)
	op, _ := paths[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
	resp, _ := op["responses"].(map[string]any)[status].(map[string]any)
	content, _ := resp["content"].(map[string]any)[ct].(map[string]any)
	s, ok := content["schema"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the OpenAPI document: %s answers no %s %s", route, status, ct)
	}
	return s, nil
}

// conformer holds output to the schemas: every object has the fields its
// schema requires and no others, every value the schema's type (after
// $ref, anyOf and type lists), times are RFC 3339 strings in UTC. It
// returns each value normalised for golden files (times and the fields in
// masks replaced by placeholders of the same JSON type) and gathers the
// mismatches.
type conformer struct {
	api   *openAPI
	masks map[string]string // field name → placeholder for its strings
	probs map[string]*problem
}

type problem struct {
	first string // path of the first value with the problem
	count int
}

func newConformer(o *openAPI, masks map[string]string) *conformer {
	return &conformer{api: o, masks: masks, probs: map[string]*problem{}}
}

func (c *conformer) fail(path, msg string) {
	p := c.probs[msg]
	if p == nil {
		p = &problem{first: path}
		c.probs[msg] = p
	}
	p.count++
}

// problems are the mismatches, each once with where it was first seen and
// how often, sorted.
func (c *conformer) problems() []string {
	msgs := make([]string, 0, len(c.probs))
	for m, p := range c.probs {
		msgs = append(msgs, fmt.Sprintf("%s (at %s; %d times)", m, p.first, p.count))
	}
	sort.Strings(msgs)
	return msgs
}

// report fails the test with each problem.
func (c *conformer) report(t *testing.T) {
	t.Helper()
	for _, m := range c.problems() {
		t.Errorf("%s", m)
	}
}

// resolve follows s's $ref, returning the schema and its name ("" for an
// inline schema).
func (c *conformer) resolve(s map[string]any) (map[string]any, string, error) {
	r, ok := s["$ref"].(string)
	if !ok {
		return s, "", nil
	}
	name, ok := strings.CutPrefix(r, schemaRefPrefix)
	target, found := c.api.schemas[name].(map[string]any)
	if !ok || !found {
		return nil, "", fmt.Errorf("$ref %q names no schema of the document", r)
	}
	return target, name, nil
}

// kindOf is v's JSON type as a schema names it.
func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case json.Number:
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// types are the JSON types s allows itself (not through anyOf or $ref).
func types(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// allows says whether a value of JSON type kind can match s.
func (c *conformer) allows(s map[string]any, kind string) bool {
	s, _, err := c.resolve(s)
	if err != nil {
		return false
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && c.allows(m, kind) {
				return true
			}
		}
		return false
	}
	for _, t := range types(s) {
		if t == kind || (t == "number" && kind == "integer") {
			return true
		}
	}
	return false
}

// describe writes s as a short type: `[integer|null]|null`, `attempt|null`,
// `date-time`.
func (c *conformer) describe(s map[string]any) string {
	if r, ok := s["$ref"].(string); ok {
		return strings.TrimPrefix(r, schemaRefPrefix)
	}
	var parts []string
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			m, _ := a.(map[string]any)
			parts = append(parts, c.describe(m))
		}
	}
	for _, t := range types(s) {
		switch {
		case t == "array":
			items, _ := s["items"].(map[string]any)
			parts = append(parts, "["+c.describe(items)+"]")
		case t == "string" && s["format"] == "date-time":
			parts = append(parts, "date-time")
		default:
			parts = append(parts, t)
		}
	}
	if len(parts) == 0 {
		return "(no type)"
	}
	return strings.Join(parts, "|")
}

// conform checks v, found at path and described as where, against the
// schema s.
func (c *conformer) conform(path, where string, v any, s map[string]any) any {
	r, name, err := c.resolve(s)
	if err != nil {
		c.fail(path, fmt.Sprintf("%s: %v", where, err))
		return v
	}
	if name != "" && kindOf(v) == "object" {
		where = name
	}
	s = r
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && c.allows(m, kindOf(v)) {
				return c.conform(path, where, v, m)
			}
		}
		c.fail(path, fmt.Sprintf("%s: %s, the schema says %s", where, kindOf(v), c.describe(s)))
		return v
	}
	kind := kindOf(v)
	if !c.allows(s, kind) {
		c.fail(path, fmt.Sprintf("%s: %s, the schema says %s", where, kind, c.describe(s)))
		return v
	}
	switch x := v.(type) {
	case string:
		if s["format"] == "date-time" {
			ts, err := time.Parse(time.RFC3339Nano, x)
			switch {
			case err != nil:
				c.fail(path, fmt.Sprintf("%s: %q is not an RFC 3339 time", where, x))
			case ts.Location() != time.UTC:
				c.fail(path, fmt.Sprintf("%s: %q is not in UTC", where, x))
			}
			return "<time>"
		}
		return x
	case []any:
		items, ok := s["items"].(map[string]any)
		if !ok {
			c.fail(path, fmt.Sprintf("%s: the schema's list has no items", where))
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = c.conform(fmt.Sprintf("%s[%d]", path, i), where+"[]", e, items)
		}
		return out
	case map[string]any:
		return c.object(path, where, x, s)
	}
	return v
}

// object checks an object against its schema: the required properties
// are there, each property has its type, and no other field is there
// unless the schema allows more (a map).
func (c *conformer) object(path, where string, m map[string]any, s map[string]any) any {
	props, _ := s["properties"].(map[string]any)
	required, _ := s["required"].([]any)
	out := map[string]any{}
	for _, r := range required {
		f, _ := r.(string)
		if _, ok := m[f]; !ok {
			c.fail(path, fmt.Sprintf("%s: field %q is in the OpenAPI schema but missing from the output", where, f))
		}
	}
	fields := make([]string, 0, len(m))
	for f := range m {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		v := m[f]
		if p, ok := props[f].(map[string]any); ok {
			out[f] = c.mask(f, c.conform(path+"."+f, where+"."+f, v, p))
			continue
		}
		if extra, ok := s["additionalProperties"].(map[string]any); ok {
			out[f] = c.conform(path+"."+f, where+"{}", v, extra)
			continue
		}
		c.fail(path, fmt.Sprintf("%s: field %q is in the output but not in the OpenAPI schema", where, f))
		out[f] = v
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

// The conformer finds what is wrong with a hand-made object: a field the
// schema requires is missing, a field it does not list is there, a value
// has the wrong type, a time is not in UTC, a $ref or a list of them
// leads to an object that is wrong in its turn.
func TestContractConformer(t *testing.T) {
	o := loadOpenAPI(t)
	obj := func(s string) any { return decodeJSON(t, s) }

	c := newConformer(o, nil)
	got := c.conform("m", "m", obj(`{"path": "/data", "size": 3}`), ref("mount"))
	if want := []string{
		`mount: field "size" is in the output but not in the OpenAPI schema (at m; 1 times)`,
		`mount: field "source" is in the OpenAPI schema but missing from the output (at m; 1 times)`,
	}; fmt.Sprint(c.problems()) != fmt.Sprint(want) {
		t.Errorf("a mount without source and with size:\n got %q\nwant %q", c.problems(), want)
	}
	if b, _ := json.Marshal(got); string(b) != `{"path":"/data","size":3}` {
		t.Errorf("normalised %s", b)
	}

	c = newConformer(o, nil)
	c.conform("m", "m", obj(`{"path": "/data", "source": "/home/x"}`), ref("mount"))
	if p := c.problems(); len(p) != 0 {
		t.Errorf("a good mount: %q", p)
	}

	c = newConformer(o, map[string]string{"zone": "<zone>"})
	got = c.conform("tries", "tries", obj(`[{"task": 0, "attempt": "1", "round": 0, "cloud": "local", "region": "local",
		"zone": "local-a", "class": "capacity", "message": null, "at": "2025-01-02T03:04:05+01:00"}]`), listOf(ref("launch_try")))
	want := []string{
		`launch_try.at: "2025-01-02T03:04:05+01:00" is not in UTC (at tries[0].at; 1 times)`,
		`launch_try.attempt: string, the schema says integer (at tries[0].attempt; 1 times)`,
		`launch_try.message: null, the schema says string (at tries[0].message; 1 times)`,
	}
	if fmt.Sprint(c.problems()) != fmt.Sprint(want) {
		t.Errorf("a launch try of wrong types:\n got %q\nwant %q", c.problems(), want)
	}
	if z := dig(got, "0.zone"); z != "<zone>" {
		t.Errorf("zone is %v, want it masked", z)
	}
	if at := dig(got, "0.at"); at != "<time>" {
		t.Errorf("at is %v, want <time>", at)
	}

	// Nullable lists of nullable items, and a nullable object by $ref.
	c = newConformer(o, nil)
	j := decodeJSON(t, goodJob).(map[string]any)
	c.conform("job", "job", j, ref("job"))
	if p := c.problems(); len(p) != 0 {
		t.Errorf("a good job: %q", p)
	}
	j["exit_codes"] = []any{json.Number("1"), "x"}
	j["size"] = map[string]any{"cpus": "8"}
	j["submitted_at"] = "yesterday"
	c.conform("job", "job", j, ref("job"))
	want = []string{
		`job.exit_codes[]: string, the schema says integer|null (at job.exit_codes[1]; 1 times)`,
		`job.submitted_at: "yesterday" is not an RFC 3339 time (at job.submitted_at; 1 times)`,
		`size: field "accelerators" is in the OpenAPI schema but missing from the output (at job.size; 1 times)`,
		`size: field "memory" is in the OpenAPI schema but missing from the output (at job.size; 1 times)`,
	}
	if fmt.Sprint(c.problems()) != fmt.Sprint(want) {
		t.Errorf("a job of wrong types:\n got %q\nwant %q", c.problems(), want)
	}
}

// goodJob is a job as `jobs queue -o json` prints one.
const goodJob = `{"cancelled_by": null, "cost": 12.4, "cost_estimate": false, "current_task": 0, "ended_at": "2025-01-02T03:04:05.5Z", "exit_codes": [0, null],
	"failure_reason": null, "id": 1, "input_key": "abc", "location": "aws/us-east-1a", "name": "spot", "num_tasks": 1, "overrides": null, "owner": "alice",
	"recovery_count": 1, "requested_by": null, "resources": "1x[A100:8]", "restarts_on_errors": 0, "retried_in": null, "retry_of": null,
	"retry_reason": null, "root_id": 1, "size": {"cpus": null, "memory": "32+", "accelerators": null},
	"started_at": "2025-01-02T03:04:00Z", "status": "SUCCEEDED", "status_reason": null,
	"submitted_at": "2025-01-02T03:03:59Z", "trigger": "user", "cost": 1.25, "cost_estimate": false,
	"priority": 500, "wait_reason": null, "queue_place": null, "preempted_for": null}`
