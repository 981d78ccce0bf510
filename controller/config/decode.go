package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// Problem is one thing wrong with config.yaml or an environment override.
type Problem struct {
	Line int    // in config.yaml; 0 for an environment variable or the whole file
	Key  string // controller.poll_interval, or the variable SORTIE_POLL_INTERVAL
	Msg  string
}

// Error is a configuration sortie cannot run with: the CLI exits 2 on it.
type Error struct {
	Path     string // config.yaml's path
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		switch {
		case p.Line > 0 && p.Key == "":
			lines[i] = fmt.Sprintf("%s line %d: %s", e.Path, p.Line, p.Msg)
		case p.Line > 0:
			lines[i] = fmt.Sprintf("%s line %d: %s: %s", e.Path, p.Line, p.Key, p.Msg)
		case p.Key != "" && strings.HasPrefix(p.Key, "SORTIE_"):
			lines[i] = fmt.Sprintf("environment variable %s: %s", p.Key, p.Msg)
		case p.Key != "":
			lines[i] = fmt.Sprintf("%s: %s: %s", e.Path, p.Key, p.Msg)
		default:
			lines[i] = fmt.Sprintf("%s: %s", e.Path, p.Msg)
		}
	}
	return strings.Join(lines, "\n")
}

// maxNodes bounds the values a config.yaml may hold once its aliases are
// followed, so that an alias bomb cannot hold the process.
const maxNodes = 100000

// decoder fills a Config from a YAML tree by the structs' json tags,
// recording each key's line and every problem with its line and key.
type decoder struct {
	lines    map[string]int
	problems []Problem
	nodes    int
}

// decodeYAML reads config.yaml's content into cfg.
func decodeYAML(b []byte, cfg *Config) (lines map[string]int, problems []Problem) {
	d := &decoder{lines: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return d.lines, nil
		}
		return d.lines, []Problem{yamlProblem(err)}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return d.lines, []Problem{yamlProblem(err)}
		}
		return d.lines, []Problem{{Line: more.Line, Msg: "a second document (after ---): config.yaml holds one mapping"}}
	}
	if len(doc.Content) == 1 {
		d.walk(doc.Content[0], reflect.ValueOf(cfg).Elem(), "")
	}
	return d.lines, d.problems
}

// yamlProblem turns the YAML parser's "yaml: line 3: did not find
// expected key" into a problem at that line.
func yamlProblem(err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(n); err == nil {
				line, msg = l, after
			}
		}
	}
	if line > 0 {
		return Problem{Line: line, Msg: msg + "; it is not valid YAML"}
	}
	return Problem{Msg: msg + "; it is not valid YAML"}
}

// maxProblems bounds the problems one config.yaml reports.
const maxProblems = 20

func (d *decoder) add(n *yaml.Node, key, format string, args ...any) {
	if len(d.problems) == maxProblems {
		d.problems = append(d.problems, Problem{Msg: "more problems follow; fix these first"})
	}
	if len(d.problems) > maxProblems {
		return
	}
	d.problems = append(d.problems, Problem{Line: n.Line, Key: cmpOr(key, "(top level)"), Msg: fmt.Sprintf(format, args...)})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// shown is a scalar as an error shows it: quoted, and cut when long.
func shown(n *yaml.Node) string {
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return strconv.Quote(v)
}

var (
	durationType = reflect.TypeOf(Duration(0))
	byteSizeType = reflect.TypeOf(ByteSize(0))
)

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return shown(n)
}

func (d *decoder) walk(n *yaml.Node, v reflect.Value, key string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if d.nodes++; d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			d.add(n, key, "config.yaml holds more than %d values (are aliases nested?)", maxNodes)
		}
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value is an absent one
	}
	if key != "" {
		d.lines[key] = n.Line
	}
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		// An optional value: present, even as zero, is told from absent.
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.walk(n, v.Elem(), key)
		return
	}
	if t == durationType {
		if n.Kind != yaml.ScalarNode {
			d.add(n, key, "%s is not a duration; write one such as 5s or 1m30s", kindName(n))
			return
		}
		var dur Duration
		if err := dur.UnmarshalJSON([]byte(strconv.Quote(n.Value))); err != nil {
			d.add(n, key, "%v", err)
			return
		}
		v.SetInt(int64(dur))
		return
	}
	if t == byteSizeType {
		if n.Kind != yaml.ScalarNode {
			d.add(n, key, "%s is not a size; write one such as 512MiB or 1GiB", kindName(n))
			return
		}
		b, err := ParseByteSize(n.Value)
		if err != nil {
			d.add(n, key, "%v", err)
			return
		}
		v.SetInt(int64(b))
		return
	}
	switch t.Kind() {
	case reflect.Map:
		// A mapping of names to values (notify.secrets). A value is never
		// shown in a message: it may be a key.
		if n.Kind != yaml.MappingNode || t.Key().Kind() != reflect.String {
			d.add(n, key, "%s is not a mapping of names to values", kindName(n))
			return
		}
		m := reflect.MakeMap(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			path := key + "." + k.Value
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				d.add(k, path, "the key is given twice")
				continue
			}
			if val.Kind != yaml.ScalarNode {
				d.lines[path] = val.Line
				d.add(val, path, "%s is not a string", kindName(val))
				continue
			}
			e := reflect.New(t.Elem()).Elem()
			d.walk(val, e, path)
			m.SetMapIndex(reflect.ValueOf(k.Value), e)
		}
		v.Set(m)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.add(n, key, "%s is not a mapping of keys; write keys such as %s", kindName(n), strings.Join(fieldNames(t)[:min(3, len(fieldNames(t)))], ", "))
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			name := k.Value
			path := name
			if key != "" {
				path = key + "." + name
			}
			if seen[name] {
				d.add(k, path, "the key is given twice")
				continue
			}
			seen[name] = true
			f, ok := fieldByTag(t, name)
			if !ok {
				d.add(k, path, "unknown key%s; the keys here are %s", didYouMean(name, fieldNames(t)), strings.Join(fieldNames(t), ", "))
				continue
			}
			d.walk(val, v.FieldByIndex(f.Index), path)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.add(n, key, "%s is not a list; write [a, b] or one '- item' per line", kindName(n))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.walk(item, s.Index(i), fmt.Sprintf("%s[%d]", key, i))
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.add(n, key, "%s is not a string", kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int:
		i, err := strconv.ParseInt(n.Value, 10, 64)
		if n.Kind != yaml.ScalarNode || err != nil || i < math.MinInt32 || i > math.MaxInt32 {
			d.add(n, key, "%s is not a whole number", kindName(n))
			return
		}
		v.SetInt(i)
	case reflect.Uint64:
		u, err := strconv.ParseUint(n.Value, 10, 64)
		if n.Kind != yaml.ScalarNode || err != nil {
			d.add(n, key, "%s is not a whole number from 0 to %d", kindName(n), uint64(math.MaxUint64))
			return
		}
		v.SetUint(u)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.add(n, key, "%s is not a number", kindName(n))
			return
		}
		v.SetFloat(f)
	default:
		d.add(n, key, "cannot be read (a %s)", t)
	}
}

// fieldByTag finds the field of struct type t whose json tag is name.
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name && tag != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldNames lists the keys struct type t reads, sorted.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	sort.Strings(out)
	return out
}

// didYouMean names the known key closest to name, when one is close.
func didYouMean(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := distance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// distance is the Levenshtein distance, capped for long strings.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// maxDuration is the largest duration a config value may name, in seconds.
var maxDuration = float64(math.MaxInt64) / float64(time.Second)
