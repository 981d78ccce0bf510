package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sortie/schema"
)

// Error is a configuration sortie cannot run with: the CLI exits 2 on it.
type Error struct {
	Path     string // config.yaml's path
	Problems []schema.Problem
}

// inFileOrder sorts problems as a reader meets them in the file: by line,
// those of no line (an environment variable, the cut-off note) last.
func inFileOrder(ps []schema.Problem) {
	order := func(p schema.Problem) int {
		if p.Line == 0 {
			return math.MaxInt
		}
		return p.Line
	}
	sort.SliceStable(ps, func(i, j int) bool { return order(ps[i]) < order(ps[j]) })
}

// Error is one problem per line: at its line in config.yaml, under its
// environment variable, or for the file as a whole.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		switch {
		case p.Line > 0:
			lines[i] = fmt.Sprintf("%s line %d: %s", e.Path, p.Line, p.Error())
		case strings.HasPrefix(p.Path, "SORTIE_"):
			lines[i] = "environment variable " + p.Error()
		default:
			lines[i] = fmt.Sprintf("%s: %s", e.Path, p.Error())
		}
	}
	return strings.Join(lines, "\n")
}

// decoder fills a Config, by the structs' json tags, from config.yaml read
// by schema's YAML decoder, which task files are read with too.
type decoder struct {
	lines    map[string]int
	problems []schema.Problem
}

// decodeYAML reads config.yaml's content into cfg: it returns the line of
// each key, and every problem with its line and key.
func decodeYAML(b []byte, cfg *Config) (lines map[string]int, problems []schema.Problem) {
	d := &decoder{lines: map[string]int{}}
	v, err := schema.DecodeYAML(string(b), d.lines)
	if err != nil {
		return d.lines, []schema.Problem{{Line: err.Line, Message: "invalid YAML: " + err.Msg}}
	}
	d.walk(v, reflect.ValueOf(cfg).Elem(), "")
	return d.lines, d.problems
}

// maxProblems bounds the problems one config.yaml reports.
const maxProblems = 20

func (d *decoder) add(p schema.Problem) {
	if len(d.problems) == maxProblems {
		d.problems = append(d.problems, schema.Problem{Message: "more problems follow; fix these first"})
	}
	if len(d.problems) > maxProblems {
		return
	}
	p.Line = d.lines[p.Path]
	p.Path = cmp.Or(p.Path, "(top level)")
	d.problems = append(d.problems, p)
}

func (d *decoder) addf(key, format string, args ...any) {
	d.add(schema.Problem{Path: key, Message: fmt.Sprintf(format, args...)})
}

// scalarText is a scalar's text; ok is false for a list or a mapping.
func scalarText(v any) (text string, ok bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// shown is a value as an error shows it: a scalar quoted, and cut when
// long; a list or a mapping by its kind, as it may hold a key.
func shown(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	s, _ := scalarText(v)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

var (
	durationType = reflect.TypeOf(Duration(0))
	byteSizeType = reflect.TypeOf(ByteSize(0))
)

func (d *decoder) walk(v any, rv reflect.Value, key string) {
	if v == nil {
		return // an empty value is an absent one
	}
	t := rv.Type()
	text, scalar := scalarText(v)
	switch {
	case t.Kind() == reflect.Pointer:
		// An optional value: present, even as zero, is told from absent.
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		d.walk(v, rv.Elem(), key)
	case t == durationType:
		var dur Duration
		if !scalar {
			d.addf(key, "%s is not a duration; write one such as 5s or 1m30s", shown(v))
		} else if err := dur.UnmarshalJSON([]byte(strconv.Quote(text))); err != nil {
			d.addf(key, "%v", err)
		}
		rv.SetInt(int64(dur))
	case t == byteSizeType:
		b, err := ParseByteSize(text)
		if !scalar {
			d.addf(key, "%s is not a size; write one such as 512MiB or 1GiB", shown(v))
		} else if err != nil {
			d.addf(key, "%v", err)
		}
		rv.SetInt(int64(b))
	case t.Kind() == reflect.Map:
		// A mapping of names to values (notify.secrets). A value is never
		// shown in a message: it may be a key.
		m, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			d.addf(key, "%s is not a mapping of names to values", shown(v))
			return
		}
		out := reflect.MakeMap(t)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			path := key + "." + k
			if _, ok := scalarText(m[k]); !ok && m[k] != nil && !nested(t.Elem()) {
				d.addf(path, "%s is not a string", shown(m[k]))
				continue
			}
			e := reflect.New(t.Elem()).Elem()
			d.walk(m[k], e, path)
			out.SetMapIndex(reflect.ValueOf(k), e)
		}
		rv.Set(out)
	case t.Kind() == reflect.Struct:
		names := fieldNames(t)
		m, ok := v.(map[string]any)
		if !ok {
			d.addf(key, "%s is not a mapping of keys; write keys such as %s", shown(v), strings.Join(names[:min(3, len(names))], ", "))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			path := k
			if key != "" {
				path = key + "." + k
			}
			if f, ok := fieldByTag(t, k); ok {
				d.walk(m[k], rv.FieldByIndex(f.Index), path)
			} else {
				d.add(schema.UnknownField(path, k, names))
			}
		}
	case t.Kind() == reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			d.addf(key, "%s is not a list; write [a, b] or one '- item' per line", shown(v))
			return
		}
		s := reflect.MakeSlice(t, len(l), len(l))
		for i, item := range l {
			d.walk(item, s.Index(i), fmt.Sprintf("%s[%d]", key, i))
		}
		rv.Set(s)
	case t.Kind() == reflect.String && scalar:
		rv.SetString(text)
	case t.Kind() == reflect.String:
		d.addf(key, "%s is not a string", shown(v))
	case t.Kind() == reflect.Int:
		i, err := strconv.ParseInt(text, 10, 64)
		if !scalar || err != nil || i < math.MinInt32 || i > math.MaxInt32 {
			d.addf(key, "%s is not a whole number", shown(v))
			return
		}
		rv.SetInt(i)
	case t.Kind() == reflect.Uint64:
		u, err := strconv.ParseUint(text, 10, 64)
		if !scalar || err != nil {
			d.addf(key, "%s is not a whole number from 0 to %d", shown(v), uint64(math.MaxUint64))
			return
		}
		rv.SetUint(u)
	case t.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(text, 64)
		if !scalar || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.addf(key, "%s is not a number", shown(v))
			return
		}
		rv.SetFloat(f)
	case t.Kind() == reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.addf(key, "%s is not true or false", shown(v))
			return
		}
		rv.SetBool(b)
	default:
		d.addf(key, "cannot be read (a %s)", t)
	}
}

// nested says whether a map's values are mappings themselves (each
// user's limits), not scalars.
func nested(t reflect.Type) bool {
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Map
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

// maxDuration is the largest duration a config value may name, in seconds.
var maxDuration = float64(math.MaxInt64) / float64(time.Second)
