package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeYAMLValues(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       any
	}{
		{"numbers keep their text", "a: 12345678901234567890123\nb: 0.1\nc: -7\nd: 1e3", map[string]any{
			"a": json.Number("12345678901234567890123"), "b": json.Number("0.1"), "c": json.Number("-7"), "d": json.Number("1e3")}},
		{"other number forms become JSON numbers", "a: 0x1F\nb: 0o17\nc: 1_000\nd: +5\ne: .5\nf: 1.", map[string]any{
			"a": json.Number("31"), "b": json.Number("15"), "c": json.Number("1000"), "d": json.Number("5"), "e": json.Number("0.5"), "f": json.Number("1")}},
		{"YAML 1.1 booleans as PyYAML reads them, unless quoted", "a: yes\nb: Off\nc: 'yes'\nd: \"on\"\ne: True\nf: y", map[string]any{
			"a": true, "b": false, "c": "yes", "d": "on", "e": true, "f": "y"}},
		{"nulls", "a:\nb: ~\nc: null\nd: 'null'", map[string]any{"a": nil, "b": nil, "c": nil, "d": "null"}},
		{"keys are their text", "1: a\ntrue: b\nnull: c", map[string]any{"1": "a", "true": "b", "null": "c"}},
		{"a flow set has null values", "{A100:1, H100}", map[string]any{"A100:1": nil, "H100": nil}},
		{"anchors, aliases and merge keys", "base: &b {cpus: 2, memory: 8}\nr:\n  <<: *b\n  memory: 16\nl: [*b]", map[string]any{
			"base": map[string]any{"cpus": json.Number("2"), "memory": json.Number("8")},
			"r":    map[string]any{"cpus": json.Number("2"), "memory": json.Number("16")},
			"l":    []any{map[string]any{"cpus": json.Number("2"), "memory": json.Number("8")}}}},
		{"infinity stays text", "a: .inf", map[string]any{"a": ".inf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, empty, err := decodeYAML(tt.yaml)
			if err != nil || empty {
				t.Fatalf("decodeYAML = empty %v, err %v", empty, err)
			}
			if diff := cmp.Diff(tt.want, v); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeYAMLEmpty(t *testing.T) {
	for _, text := range []string{"", "# only a comment\n", "null", "~\n", "\n\n"} {
		if v, empty, err := decodeYAML(text); err != nil || !empty || v != nil {
			t.Errorf("decodeYAML(%q) = %v, %v, %v; want empty", text, v, empty, err)
		}
	}
}

func TestYAMLErrorsNamePlaces(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"name: {{name}}\nrun: x\n",
			"invalid YAML: line 1, column 8: a key is a mapping or a list here; if the file is a template with {{...}} placeholders, fill them in first, and quote any text that starts with { or ["},
		{"run: x\nresources:\n  cpus: 2\n  cpus: 4\n",
			`invalid YAML: line 4, column 3: key "cpus" is given twice in the same mapping; keep one`},
		{"run: x\nresources: {cpus: 2\n", "invalid YAML: line 2: did not find expected ',' or '}'"},
		{"run: x\n  bad indent: y\n", "invalid YAML: line 2: mapping values are not allowed in this context"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.yaml), testClouds())
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) = %v\nwant %s", tt.yaml, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "interface {}") {
			t.Errorf("error shows Go types: %v", err)
		}
	}
}

func TestYAMLAliasExpansionIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		prev := "*a" + string(rune('0'+i-1))
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	b.WriteString("run: x\n")
	_, err := Parse([]byte(b.String()), testClouds())
	if err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Errorf("Parse of an alias bomb = %v, want it refused", err)
	}
}

// TestTrailingContentIsRefused: a flow value or quoted string followed by
// more text used to decode as the first value alone, the rest dropped.
func TestTrailingContentIsRefused(t *testing.T) {
	const msg = "something follows the end of the value; a document holds one value " +
		"(separate tasks with a line of ---, and quote a value that starts with a quote, [ or { to keep it as text)"
	tests := []struct{ yaml, at string }{
		{`{run: "echo first"} {run: "echo second"}`, "line 1, column 21"},
		{`"a" "b"`, "line 1, column 5"},
		{`'it''s' x`, "line 1, column 9"},
		{"{run: 'a # b', x: [1, {y: \"]\"}]}   # note\n  [2]\n", "line 2, column 3"},
		{"&anchor [1] [2]", "line 1, column 13"},
		{"# head\n{a: 1}\n\n{b: 2}\n", "line 4, column 1"},
		{"\"é\" x", "line 1, column 5"},
	}
	for _, tt := range tests {
		_, _, err := decodeYAML(tt.yaml)
		if want := tt.at + ": " + msg; err == nil || err.Error() != want {
			t.Errorf("decodeYAML(%q) = %v\nwant %s", tt.yaml, err, want)
		}
	}
	_, err := Parse([]byte(`{run: "echo first"} {run: "echo second"}`), testClouds())
	if err == nil || !strings.HasPrefix(err.Error(), "invalid YAML: line 1, column 21: something follows the end of the value") {
		t.Errorf("Parse of two flow mappings on a line = %v; want it refused with the place", err)
	}
	for _, ok := range []string{"a: 1\n", "{a: 1}  # c\n", "\"a\"\n", "[1, 2]\n\n"} {
		if _, _, err := decodeYAML(ok); err != nil {
			t.Errorf("decodeYAML(%q) = %v; want it read", ok, err)
		}
	}
}

// config.yaml's problems take their lines from DecodeYAML: a key's line in
// a mapping, an item's in a list, and a key written beside a merge over
// the merged one's.
func TestDecodeYAMLLines(t *testing.T) {
	lines := map[string]int{}
	text := "base: &b {cpus: 2, memory: 8}\nr:\n  memory: 16\n  <<: *b\nl:\n- a\n- {x: 1}\n"
	if _, err := DecodeYAML(text, lines); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"": 1, "base": 1, "base.cpus": 1, "base.memory": 1, "r": 2, "r.memory": 3, "r.cpus": 1,
		"l": 5, "l[0]": 6, "l[1]": 7, "l[1].x": 7}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if _, err := DecodeYAML("a: 1\n---\nb: 2\n", nil); err == nil || err.Error() != "line 2: a second document (after ---): the file holds one" {
		t.Errorf("two documents: %v", err)
	}
}
