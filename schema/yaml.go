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
	"unicode/utf8"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// decodeYAML is DecodeYAML for a task document, which needs no lines:
// empty says the document holds no value.
func decodeYAML(text string) (v any, empty bool, err error) {
	v, yerr := DecodeYAML(text, nil)
	if yerr != nil {
		return nil, false, yerr
	}
	return v, v == nil, nil
}

// DecodeYAML is the one YAML reader of task files and config.yaml. It turns
// one document into JSON values: map[string]any, []any, string,
// json.Number (numbers keep the text they were written with, so none
// passes through a float), bool and nil. Scalars are read as SkyPilot's
// YAML 1.1 reader reads them: yes, no, on and off are booleans unless
// quoted. A duplicate key is an error: the second silently winning hides
// mistakes. Errors name the line, and the column where YAML gives one.
// When lines is not nil, it receives the line of every value by its path
// (controller.poll_interval, regions[0]): the key's line in a mapping, the
// item's in a list, "" for the whole document.
func DecodeYAML(text string, lines map[string]int) (any, *YAMLError) {
	var doc yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(err, text)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	// A flow value or a quoted string ends before its line does: whatever
	// follows it would otherwise be dropped without a word.
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &YAMLError{Line: next.Line, Msg: "a second document (after ---): the file holds one"}
	case !errors.Is(err, io.EOF):
		return nil, trailingError(text, doc.Content[0])
	}
	c := &converter{lines: lines}
	if lines != nil {
		lines[""] = doc.Content[0].Line
	}
	return c.value(doc.Content[0], "")
}

// maxValues bounds how many values a document may expand to: aliases can
// make a small file name a huge tree.
const maxValues = 100_000

type converter struct {
	values int
	lines  map[string]int // nil when no lines are asked for
}

// YAMLError is a document that cannot be read: where, and what is wrong.
type YAMLError struct {
	Line, Column int // 0 when unknown
	Msg          string
}

func (e *YAMLError) Error() string {
	switch {
	case e.Column > 0:
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

func errAt(n *yaml.Node, format string, args ...any) *YAMLError {
	return &YAMLError{Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)}
}

// at records the line of the value at path, when lines are asked for.
func (c *converter) at(path string, line int) {
	if c.lines != nil {
		c.lines[path] = line
	}
}

func (c *converter) value(n *yaml.Node, path string) (any, *YAMLError) {
	c.values++
	if c.values > maxValues {
		return nil, errAt(n, "the document expands to more than %d values; use fewer aliases", maxValues)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, errAt(n, "unknown alias %q", n.Value)
		}
		return c.value(n.Alias, path)
	case yaml.ScalarNode:
		return scalar(n), nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			p := ""
			if c.lines != nil {
				p = index(path, i)
				c.at(p, item.Line)
			}
			v, err := c.value(item, p)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n, path)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], path)
	}
	return nil, errAt(n, "unexpected YAML node")
}

func (c *converter) mapping(n *yaml.Node, path string) (map[string]any, *YAMLError) {
	out := make(map[string]any, len(n.Content)/2)
	var merged []map[string]any
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			ms, err := c.merge(val, path)
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
		p := ""
		if c.lines != nil {
			p = join(path, key)
			c.at(p, k.Line)
		}
		v, err := c.value(val, p)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	// The lines of keys written here, over those of merged ones.
	for i := 0; c.lines != nil && i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() != "!!merge" {
			c.at(join(path, k.Value), k.Line)
		}
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
func (c *converter) merge(n *yaml.Node, path string) ([]map[string]any, *YAMLError) {
	v, err := c.value(n, path)
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

func mapKey(k *yaml.Node) (string, *YAMLError) {
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
func syntaxError(err error, text string) *YAMLError {
	m := yamlErrorText().FindStringSubmatch(err.Error())
	if m == nil {
		return &YAMLError{Msg: err.Error()}
	}
	line, _ := strconv.Atoi(m[1])
	if slices.ContainsFunc(parserProblems(), func(p string) bool { return strings.HasPrefix(m[2], p) }) {
		line++
	}
	lines := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		lines++
	}
	return &YAMLError{Line: min(line, max(lines, 1)), Msg: m[2]}
}

// trailingError places what follows a document's value: the first
// character after the flow collection or quoted string the value is.
// Where that end cannot be found, it names the line after the value's
// start line, which the text past the value is on or after.
func trailingError(text string, root *yaml.Node) *YAMLError {
	const msg = "something follows the end of the value; a document holds one value " +
		"(separate tasks with a line of ---, and quote a value that starts with a quote, [ or { to keep it as text)"
	start := offsetOf(text, root.Line, root.Column)
	if end := endOfFlowValue(text, start); end >= 0 {
		if at := skipBlank(text, end); at < len(text) {
			line, col := lineColumn(text, at)
			return &YAMLError{Line: line, Column: col, Msg: msg}
		}
	}
	return &YAMLError{Line: root.Line, Msg: msg}
}

// offsetOf turns YAML's 1-based line and column (counted in characters)
// into a byte offset in text.
func offsetOf(text string, line, column int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return len(text)
		}
		off += i + 1
	}
	for c := 1; c < column && off < len(text) && text[off] != '\n'; c++ {
		_, size := utf8.DecodeRuneInString(text[off:])
		off += size
	}
	return off
}

func lineColumn(text string, off int) (line, column int) {
	before := text[:off]
	line = strings.Count(before, "\n") + 1
	lineStart := strings.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCountInString(before[lineStart:]) + 1
}

// endOfFlowValue returns the offset just past the flow collection or
// quoted string starting at start (after any anchor or tag), or -1.
func endOfFlowValue(text string, start int) int {
	depth := 0
	for i := start; i < len(text); i++ {
		switch c := text[i]; c {
		case '"', '\'':
			j := endOfQuoted(text, i)
			if j < 0 {
				return -1
			}
			if depth == 0 {
				return j
			}
			i = j - 1
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth <= 0 {
				return i + 1
			}
		case '#':
			if i == 0 || text[i-1] == ' ' || text[i-1] == '\t' || text[i-1] == '\n' {
				nl := strings.IndexByte(text[i:], '\n')
				if nl < 0 {
					return -1
				}
				i += nl
			}
		case '\n':
			if depth == 0 {
				return -1 // a value before any bracket or quote: not a flow value
			}
		}
	}
	return -1
}

// endOfQuoted returns the offset just past the quoted string opening at i.
func endOfQuoted(text string, i int) int {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		switch {
		case q == '"' && text[j] == '\\':
			j++
		case text[j] == q && q == '\'' && j+1 < len(text) && text[j+1] == '\'':
			j++ // '' is a quote inside a single-quoted string
		case text[j] == q:
			return j + 1
		}
	}
	return -1
}

// skipBlank skips spaces, line breaks and comments from off.
func skipBlank(text string, off int) int {
	for off < len(text) {
		switch text[off] {
		case ' ', '\t', '\r', '\n':
			off++
		case '#':
			nl := strings.IndexByte(text[off:], '\n')
			if nl < 0 {
				return len(text)
			}
			off += nl
		default:
			return off
		}
	}
	return off
}
