package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sortie/controller/contract"
)

func openapiDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// Every route that answers JSON has its answer's schema, and every
// reference names a schema of the document.
func TestOpenAPIEveryAnswerHasItsSchema(t *testing.T) {
	doc := openapiDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	noBody := []string{"GET /v1/healthz", "GET /v1/openapi.json", "HEAD /v1/blobs/{sha256}"}
	for _, r := range routes {
		if _, ok := answers[r]; !ok && !slices.Contains(noBody, r) {
			t.Errorf("route %s: no answer schema", r)
		}
	}
	b, _ := json.Marshal(doc)
	for _, ref := range strings.Split(string(b), `"$ref":"#/components/`)[1:] {
		ref = ref[:strings.IndexByte(ref, '"')]
		kind, name, _ := strings.Cut(ref, "/")
		if kind == "schemas" && schemas[name] == nil {
			t.Errorf("a reference to schema %s, which the document has not", name)
		}
	}
	for name := range contract.Objects {
		o := contract.Objects[name]
		s, ok := schemas[o.Name].(map[string]any)
		if !ok {
			t.Errorf("schema %s is missing", o.Name)
			continue
		}
		for field, p := range s["properties"].(map[string]any) {
			if d, _ := p.(map[string]any)["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", o.Name, field)
			}
		}
	}
}

// The stable contract of the design: the fields a job and each attempt of
// `show` always have, absent values null rather than omitted.
func TestOpenAPIHoldsTheStableJobFields(t *testing.T) {
	schemas := openapiDoc(t)["components"].(map[string]any)["schemas"].(map[string]any)
	check := func(name string, fields, nullable []string) {
		s := schemas[name].(map[string]any)
		props := s["properties"].(map[string]any)
		var required []string
		for _, r := range s["required"].([]any) {
			required = append(required, r.(string))
		}
		for _, f := range fields {
			if props[f] == nil || !slices.Contains(required, f) {
				t.Errorf("%s.%s: not a required field", name, f)
			}
		}
		for _, f := range nullable {
			if p, _ := props[f].(map[string]any); !canBeNull(p) {
				typ, _ := json.Marshal(p)
				t.Errorf("%s.%s: %s cannot be null", name, f, typ)
			}
		}
		if s["additionalProperties"] != false {
			t.Errorf("%s allows fields it does not list", name)
		}
	}
	job := []string{"id", "name", "status", "recovery_count", "restarts_on_errors", "exit_codes", "retry_of", "retried_in",
		"root_id", "input_key", "failure_reason", "submitted_at", "ended_at"}
	check("job", job, []string{"exit_codes", "retry_of", "retried_in", "input_key", "failure_reason", "ended_at"})
	check("show", append(job, "attempts"), nil)
	attempts, _ := json.Marshal(schemas["show"].(map[string]any)["properties"].(map[string]any)["attempts"])
	if !strings.Contains(string(attempts), `"items":{"$ref":"#/components/schemas/attempt"}`) {
		t.Errorf("show.attempts is %s, not a list of attempts", attempts)
	}
	check("attempt", []string{"task", "attempt", "outcome", "exit_codes", "cluster", "region", "zone", "reason", "started_at", "ended_at"},
		[]string{"outcome", "exit_codes", "region", "zone", "reason", "ended_at"})
}

// A field without a description, or a description of no field, is an
// error: the schemas document every field there is.
func TestOpenAPISchemasRefuseUndocumentedFields(t *testing.T) {
	type answer struct {
		ID    int64   `json:"id"`
		Note  *string `json:"note"`
		Items []int   `json:"items" schema:"nullable"`
	}
	objs := []contract.Object{{Name: "answer", Type: reflect.TypeFor[answer]()}}
	docs := map[string]map[string]string{"answer": {"id": "its id", "note": "a note", "items": "the items"}}
	s, err := contract.SchemasOf(objs, docs)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(s["answer"])
	for _, want := range []string{`"required":["id","items","note"]`, `"note":{"description":"a note","type":["string","null"]}`,
		`"items":{"description":"the items","items":{"type":"integer"},"type":["array","null"]}`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("schema %s lacks %s", got, want)
		}
	}
	delete(docs["answer"], "note")
	if _, err := contract.SchemasOf(objs, docs); err == nil || !strings.Contains(err.Error(), "answer.note: no description") {
		t.Errorf("an undocumented field: %v", err)
	}
	docs["answer"]["note"], docs["answer"]["gone"] = "a note", "a field that is not there"
	if _, err := contract.SchemasOf(objs, docs); err == nil || !strings.Contains(err.Error(), "answer.gone: documented") {
		t.Errorf("a description of no field: %v", err)
	}
}

// canBeNull says whether a property's schema lets its value be null.
func canBeNull(s map[string]any) bool {
	if l, ok := s["type"].([]any); ok && slices.Contains(l, any("null")) {
		return true
	}
	alts, _ := s["anyOf"].([]any)
	for _, alt := range alts {
		if alt.(map[string]any)["type"] == "null" {
			return true
		}
	}
	return false
}
