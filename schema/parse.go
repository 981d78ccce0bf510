package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Parse reads a task file: one task, or several YAML documents separated by
// "---" that run in order as one job (a first document holding only name
// names that pipeline). Unknown fields and bad values are reported all at
// once in a *ValidationError. The tasks come back with defaults applied.
func Parse(data []byte) (*Pipeline, error) {
	docs := splitDocuments(data)
	var rp rawPipeline
	var values []any
	for _, doc := range docs {
		v, empty, err := decodeYAML(doc.text)
		switch {
		case err != nil:
			values = append(values, badDocument{msg: shiftLines(err, doc.line-1)})
		case !empty:
			values = append(values, v)
		}
	}
	if len(values) > 1 {
		if m, ok := values[0].(map[string]any); ok && len(m) == 1 {
			if name, ok := m["name"]; ok {
				rp.name, rp.hasName = name, true
				values = values[1:]
			}
		}
	}
	rp.tasks = values
	return rp.decode()
}

// rawPipeline is a task file decoded from YAML but not yet checked.
type rawPipeline struct {
	name    any
	hasName bool
	tasks   []any
}

// badDocument holds the place of a document that is not valid YAML, so the
// tasks after it keep their numbers.
type badDocument struct{ msg string }

func (rp rawPipeline) decode() (*Pipeline, error) {
	ps := &problems{}
	d := &decoder{ps: ps}
	p := &Pipeline{}
	if rp.hasName {
		p.Name = d.str("name", rp.name)
	}
	if len(rp.tasks) == 0 {
		ps.missing("", "the file holds no task; a task needs at least a command, e.g. run: python train.py")
	}
	for i, raw := range rp.tasks {
		path := ""
		if len(rp.tasks) > 1 {
			path = index("tasks", i)
		}
		if bad, ok := raw.(badDocument); ok {
			ps.missing(path, "invalid YAML: %s", bad.msg)
			continue
		}
		p.Tasks = append(p.Tasks, decodeTask(ps, path, raw))
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	if p.Name == "" {
		p.Name = p.Tasks[0].Name
	}
	p.ApplyDefaults()
	return p, nil
}

type document struct {
	text string
	line int // 1-based line of the document's first line in the file
}

var separator = lazyRegexp(`^(---|\.\.\.)(?:[ \t]+(.*))?$`)

// splitDocuments cuts a file at "---" lines. Separators are found by line
// rather than by a YAML stream decoder so each document keeps its line
// offset for error messages; a "---" inside a block scalar is indented and
// so never taken for one.
func splitDocuments(data []byte) []document {
	text := strings.TrimPrefix(string(data), "\ufeff")
	var docs []document
	cur := document{line: 1}
	var b strings.Builder
	lineNo := 0
	for line := range strings.Lines(text) {
		lineNo++
		m := separator().FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil {
			b.WriteString(line)
			continue
		}
		cur.text = b.String()
		docs = append(docs, cur)
		b.Reset()
		cur = document{line: lineNo}
		if m[1] == "---" && m[2] != "" && !strings.HasPrefix(m[2], "#") {
			// "--- key: value" starts the next document on the same line.
			b.WriteString(m[2] + "\n")
		} else {
			// Keep numbering right: the separator line becomes blank.
			b.WriteString("\n")
		}
	}
	cur.text = b.String()
	return append(docs, cur)
}

// decodeYAML turns one document into JSON values, numbers kept exact.
// Duplicate keys are errors: the second silently winning hides mistakes.
func decodeYAML(text string) (v any, empty bool, err error) {
	j, err := yaml.YAMLToJSONStrict([]byte(text))
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil, true, nil
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, false, fmt.Errorf("decode converted YAML: %w", err)
	}
	return v, false, nil
}

var lineRef = lazyRegexp(`line (\d+)`)

// shiftLines makes a YAML error's line numbers count from the top of the
// file rather than of its document, and puts it on one line.
func shiftLines(err error, offset int) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.ReplaceAll(msg, "yaml: ", "")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	msg = lineRef().ReplaceAllStringFunc(msg, func(s string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(s, "line "))
		return "line " + strconv.Itoa(n+offset)
	})
	fields := strings.Fields(strings.ReplaceAll(msg, "\n", " ; "))
	return strings.ReplaceAll(strings.Join(fields, " "), " ;", ";")
}
