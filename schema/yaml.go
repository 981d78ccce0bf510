package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// decodeYAML turns one document into JSON values: map[string]any, []any,
// string, json.Number (numbers keep the text they were written with, so
// none passes through a float), bool and nil. Scalars are read as
// SkyPilot's YAML 1.1 reader reads them: yes, no, on and off are booleans
// unless quoted. A duplicate key is an error: the second silently winning
// hides mistakes. Errors name the line, and the column where YAML gives one.
func decodeYAML(text string) (v any, empty bool, err error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(strings.NewReader(text)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true, nil
		}
		return nil, false, syntaxError(err, text)
	}
	if len(doc.Content) == 0 {
		return nil, true, nil
	}
	c := &converter{}
	v, err = c.value(doc.Content[0])
	if err != nil {
		return nil, false, err
	}
	return v, v == nil, nil
}

// maxValues bounds how many values a document may expand to: aliases can
// make a small file name a huge tree.
const maxValues = 100_000

type converter struct {
	values int
}

// nodeError is a problem at a place in the document.
type nodeError struct {
	line, column int
	msg          string
}

func (e *nodeError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.line, e.column, e.msg)
}

func errAt(n *yaml.Node, format string, args ...any) error {
	return &nodeError{line: n.Line, column: n.Column, msg: fmt.Sprintf(format, args...)}
}

func (c *converter) value(n *yaml.Node) (any, error) {
	c.values++
	if c.values > maxValues {
		return nil, errAt(n, "the document expands to more than %d values; use fewer aliases", maxValues)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, errAt(n, "unknown alias %q", n.Value)
		}
		return c.value(n.Alias)
	case yaml.ScalarNode:
		return scalar(n), nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.value(item)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0])
	}
	return nil, errAt(n, "unexpected YAML node")
}

func (c *converter) mapping(n *yaml.Node) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merged []map[string]any
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			ms, err := c.merge(val)
			if err != nil {
				return nil, err
			}
			merged = append(merged, ms...)
			continue
		}
		key, err := mapKey(k)
		if err != nil {
			return nil, err
		}
		if _, dup := out[key]; dup {
			return nil, errAt(k, "key %q is given twice in the same mapping; keep one", key)
		}
		v, err := c.value(val)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	// Keys written in the mapping win over merged ones; earlier merges win
	// over later ones, as YAML's merge key says.
	for _, m := range merged {
		for k, v := range m {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out, nil
}

// merge reads the value of a "<<" key: a mapping or a list of them.
func (c *converter) merge(n *yaml.Node) ([]map[string]any, error) {
	v, err := c.value(n)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case map[string]any:
		return []map[string]any{v}, nil
	case []any:
		var out []map[string]any
		for _, item := range v {
			m, ok := item.(map[string]any)
			if !ok {
				return nil, errAt(n, "merges %s; << takes a mapping or a list of mappings", typeName(item))
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, errAt(n, "merges %s; << takes a mapping or a list of mappings", typeName(v))
}

func mapKey(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", errAt(k, "a key is a mapping or a list here; if the file is a template with {{...}} placeholders, fill them in first, and quote any text that starts with { or [")
	}
	return k.Value, nil
}

// yaml11Bools are the plain scalars PyYAML (YAML 1.1) reads as booleans
// beyond YAML 1.2's true and false.
func yaml11Bools() map[string]bool {
	return map[string]bool{
		"yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
		"no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
	}
}

var jsonNumber = lazyRegexp(`^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$`)

func scalar(n *yaml.Node) any {
	text := n.Value
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		return strings.EqualFold(text, "true")
	case "!!int":
		return json.Number(intText(text))
	case "!!float":
		return floatValue(text)
	case "!!str":
		if n.Style == 0 {
			if b, ok := yaml11Bools()[text]; ok {
				return b
			}
		}
	}
	return text
}

// intText writes a YAML integer in decimal, keeping decimal text as it is.
func intText(text string) string {
	t := strings.TrimPrefix(text, "+")
	if jsonNumber().MatchString(t) {
		return t
	}
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(t, "-")
	t = strings.ReplaceAll(t, "_", "")
	if len(t) > 1 && t[0] == '0' && !strings.ContainsAny(t[1:2], "xXoObB") {
		t = "0o" + t[1:] // 1.1's octal 0755
	}
	var b big.Int
	if _, ok := b.SetString(t, 0); !ok {
		return text
	}
	if neg {
		b.Neg(&b)
	}
	return b.String()
}

// floatValue keeps a float's text when it is already a JSON number and
// writes it as one otherwise (1., .5, +1e3); .inf and .nan stay text.
func floatValue(text string) any {
	t := strings.TrimPrefix(text, "+")
	if jsonNumber().MatchString(t) {
		return json.Number(t)
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil || slices.Contains([]string{".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"}, strings.TrimPrefix(t, "-")) {
		return text
	}
	return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
}

var yamlErrorText = lazyRegexp(`^yaml: (?:line (\d+): )?(.*)$`)

// parserProblems are the messages of the YAML library's parser (rather
// than its scanner), whose line numbers it reports counting from 0.
func parserProblems() []string {
	return []string{"did not find expected", "found duplicate %", "found incompatible YAML document", "found undefined tag handle"}
}

// syntaxError makes the YAML library's error count lines from 1, within
// the text: a problem at the end of the text is on its last line.
func syntaxError(err error, text string) error {
	m := yamlErrorText().FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	line, _ := strconv.Atoi(m[1])
	if slices.ContainsFunc(parserProblems(), func(p string) bool { return strings.HasPrefix(m[2], p) }) {
		line++
	}
	lines := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		lines++
	}
	line = min(line, max(lines, 1))
	if line == 0 {
		return errors.New(m[2])
	}
	return fmt.Errorf("line %d: %s", line, m[2])
}
