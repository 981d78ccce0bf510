package schema

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseOptions are the values a launch brings to a task file.
type ParseOptions struct {
	// Env holds the --env and --env-file values: each one overrides the
	// variable of that name in every task's envs (adding it where a task
	// has none) and so fills a null ("required at launch") one, before
	// ${VAR} substitution runs.
	Env map[string]string
	// Clouds are the clouds the file may name (controller/clouds.Schema);
	// with none, it may name none.
	Clouds Clouds
}

// Parse reads a task file: one task, or several YAML documents separated by
// "---" that run in order as one job (a first document holding only name
// names that pipeline). Unknown fields and bad values are reported all at
// once in a *ValidationError. The tasks come back with defaults applied.
// The file may name the clouds in clouds. Parse(data, clouds) is
// ParseWith(data, ParseOptions{Clouds: clouds}).
func Parse(data []byte, clouds Clouds) (*Pipeline, error) {
	return ParseWith(data, ParseOptions{Clouds: clouds})
}

// ParseWith reads a task file as Parse does, with the launch's values in
// opts applied first. Fields accepted but ignored come back as one line
// each in the pipeline's Warnings; what is valid but still missing before
// a launch (a required env) is left for Unresolved to report.
func ParseWith(data []byte, opts ParseOptions) (*Pipeline, error) {
	if at := firstInvalidUTF8(string(data)); at >= 0 {
		line, col := lineColumn(string(data), at)
		return nil, &ValidationError{Problems: []Problem{{Message: fmt.Sprintf(
			"line %d, column %d: byte 0x%02x is not UTF-8; save the file as UTF-8 (sortie changes no text it reads)", line, col, data[at])}}}
	}
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
		if m, ok := values[0].(map[string]any); ok && isHeader(m) {
			rp.header, rp.hasHeader = m, true
			values = values[1:]
		}
	}
	rp.tasks = values
	rp.env = opts.Env
	rp.clouds = opts.Clouds
	return rp.decode()
}

// rawPipeline is a task file decoded from YAML but not yet checked.
type rawPipeline struct {
	// header is a leading document of pipeline fields only (name, and
	// SkyPilot's execution and job-group fields).
	header    map[string]any
	hasHeader bool
	tasks     []any
	// env overrides every task's envs (ParseOptions.Env).
	env map[string]string
	// filled says ${VAR} was substituted already: a pipeline turned back
	// into raw form (toRaw) holds its paths as they were filled in, and
	// filling them again would substitute values that contain $.
	filled bool
	// clouds are the clouds the tasks may name (ParseOptions.Clouds).
	clouds Clouds
}

// badDocument holds the place of a document that is not valid YAML, so the
// tasks after it keep their numbers.
type badDocument struct{ msg string }

func (rp rawPipeline) decode() (*Pipeline, error) {
	ps := &problems{}
	p := &Pipeline{}
	d := &decoder{ps: ps, warnings: &p.Warnings, filled: rp.filled, clouds: rp.clouds}
	if rp.hasHeader {
		p.Name = d.header(rp.header)
	}
	d.launchEnv(rp.env)
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
		p.Tasks = append(p.Tasks, d.task(path, withEnv(raw, rp.env)))
	}
	samePriority(ps, p.Tasks)
	if err := ps.err(); err != nil {
		return nil, err
	}
	if p.Name == "" {
		p.Name = p.Tasks[0].Name
	}
	p.ApplyDefaults(rp.clouds)
	return p, nil
}

// samePriority refuses a pipeline whose tasks name different priorities:
// a job waits in the queue as one, with one priority.
func samePriority(ps *problems, tasks []*Task) {
	first := -1
	for i, t := range tasks {
		if t == nil || t.Priority == nil {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if want := *tasks[first].Priority; *t.Priority != want {
			ps.add(index("tasks", i)+".priority", *t.Priority, "differs from tasks[%d].priority, %d; a job waits with one priority: give it once, or the same on every task", first, want)
		}
	}
}

// withEnv returns a task document with env set in its envs, leaving raw
// itself unchanged; anything but a mapping is returned as it is, for the
// decoder to report.
func withEnv(raw any, env map[string]string) any {
	m, ok := raw.(map[string]any)
	if !ok || len(env) == 0 {
		return raw
	}
	out := maps.Clone(m)
	envs := map[string]any{}
	if old, ok := m["envs"].(map[string]any); ok {
		envs = maps.Clone(old)
	} else if m["envs"] != nil {
		// Not a mapping: left for the decoder to report as written.
		return raw
	}
	for k, v := range env {
		envs[k] = v
	}
	out["envs"] = envs
	return out
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

// headerFields are the fields of a pipeline's leading document: its name,
// and SkyPilot's execution mode and job-group settings.
func headerFields() []string {
	return []string{"name", "execution", "primary_tasks", "termination_delay"}
}

// isHeader reports whether a file's first document holds pipeline fields
// only, so it names the tasks after it rather than being one.
func isHeader(m map[string]any) bool {
	if len(m) == 0 {
		return false
	}
	for k := range m {
		if !slices.Contains(headerFields(), k) {
			return false
		}
	}
	return true
}

// header reads a pipeline's leading document and returns its name.
// execution: parallel makes the file a SkyPilot job group, whose tasks run
// side by side; sortie runs a file's tasks one after another only.
func (d *decoder) header(m map[string]any) string {
	name := d.str("name", m["name"])
	exec := d.str("execution", m["execution"])
	switch strings.ToLower(strings.TrimSpace(exec)) {
	case "", "serial":
	case "parallel":
		d.ps.add("execution", exec, "makes this file a SkyPilot job group, which is not supported: sortie runs a file's tasks one after another; remove execution to run them in order")
		return name
	default:
		d.ps.add("execution", exec, "is not an execution mode; use serial (the tasks run in order)")
	}
	for _, k := range []string{"primary_tasks", "termination_delay"} {
		if _, present := m[k]; present {
			d.ps.missing(k, "is a SkyPilot job-group setting, which is not supported: sortie runs a file's tasks one after another; remove it")
		}
	}
	return name
}

// launchEnv checks the names given with --env and --env-file.
func (d *decoder) launchEnv(env map[string]string) {
	for _, k := range sortedKeys(env) {
		if !utf8.ValidString(env[k]) || !utf8.ValidString(k) {
			d.ps.missing("--env "+asciiText(k), "%s", invalidUTF8(k, env[k]))
			continue
		}
		if !envName().MatchString(k) {
			d.ps.missing("--env "+k, "is not a valid variable name; use letters, digits and _, not starting with a digit")
		}
	}
}
