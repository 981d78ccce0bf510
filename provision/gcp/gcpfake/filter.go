package gcpfake

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// filter is a parsed list filter in Compute Engine's syntax, the subset
// sortie and its tests use: comparisons `field = "value"` and
// `field != "value"` (also `eq`/`ne`, whose value is a regular expression),
// each optionally in parentheses, joined by AND (or juxtaposition) and OR.
// Fields are JSON paths such as labels.sortie-managed or operationType.
type filter struct {
	anyOf [][]term // OR of ANDs
}

type term struct {
	field string
	op    string // "=", "!=", "eq", "ne"
	value string
	re    *regexp.Regexp
}

var termRE = regexp.MustCompile(`^\(?\s*([A-Za-z0-9_.\-]+)\s*(!=|=|\beq\b|\bne\b)\s*("(?:[^"\\]|\\.)*"|[^\s()]+)\s*\)?`)

func parseFilter(s string) (filter, error) {
	var f filter
	var group []term
	rest := strings.TrimSpace(s)
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, "OR "):
			if len(group) == 0 {
				return f, fmt.Errorf("filter %q: OR without a left side", s)
			}
			f.anyOf = append(f.anyOf, group)
			group = nil
			rest = strings.TrimSpace(rest[3:])
			continue
		case strings.HasPrefix(rest, "AND "):
			rest = strings.TrimSpace(rest[4:])
			continue
		}
		m := termRE.FindStringSubmatch(rest)
		if m == nil {
			return f, fmt.Errorf("filter %q: cannot parse at %q", s, rest)
		}
		t := term{field: m[1], op: m[2], value: m[3]}
		if strings.HasPrefix(t.value, `"`) {
			if err := json.Unmarshal([]byte(t.value), &t.value); err != nil {
				return f, fmt.Errorf("filter %q: bad string %s", s, m[3])
			}
		}
		if t.op == "eq" || t.op == "ne" {
			re, err := regexp.Compile("^(?:" + t.value + ")$")
			if err != nil {
				return f, fmt.Errorf("filter %q: %w", s, err)
			}
			t.re = re
		}
		group = append(group, t)
		rest = strings.TrimSpace(rest[len(m[0]):])
	}
	if len(group) > 0 {
		f.anyOf = append(f.anyOf, group)
	}
	return f, nil
}

// match reports whether the resource satisfies the filter; an empty filter
// matches everything.
func (f filter) match(m proto.Message) bool {
	if len(f.anyOf) == 0 {
		return true
	}
	b, err := protojson.Marshal(m)
	if err != nil {
		return false
	}
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return false
	}
	return f.matchDoc(doc)
}

// matchDoc is match on the resource's JSON form.
func (f filter) matchDoc(doc map[string]any) bool {
	if len(f.anyOf) == 0 {
		return true
	}
	for _, group := range f.anyOf {
		ok := true
		for _, t := range group {
			if !t.match(doc) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (t term) match(doc map[string]any) bool {
	v, found := lookupPath(doc, t.field)
	switch t.op {
	case "=":
		return found && v == t.value
	case "!=":
		return !found || v != t.value
	case "eq":
		return found && t.re.MatchString(v)
	default: // ne
		return !found || !t.re.MatchString(v)
	}
}

// lookupPath finds a dotted path in a JSON document. Label keys hold
// dashes but no dots, so "labels.sortie-managed" splits cleanly.
func lookupPath(doc map[string]any, path string) (string, bool) {
	var cur any = doc
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[part]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case bool, float64:
		return fmt.Sprint(v), true
	}
	return "", false
}
