package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Problem is one thing wrong with a task file or config.yaml: where, what
// was there, and what to do about it. The API's error body carries it as
// JSON.
type Problem struct {
	// Path names the field, e.g. "resources.job_recovery.recover_on_exit_codes[1]",
	// prefixed with "tasks[N]." in a file of several tasks. Empty for problems
	// with the file as a whole.
	Path string `json:"path"`
	// Value is the offending value as written (strings quoted), or empty when
	// there is none to show: a missing or unknown field, null, a secret.
	Value string `json:"value,omitempty"`
	// Message says what is wrong and how to fix it.
	Message string `json:"message"`
	// Line is the field's line in config.yaml; 0 where no line is known.
	// Error leaves it to the file's error to show.
	Line int `json:"-"`
}

func (p Problem) Error() string {
	var b strings.Builder
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	if p.Value != "" {
		b.WriteString(p.Value)
		b.WriteString(" ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ValidationError lists every problem found in a task file, so a user fixes
// them in one round instead of one per launch. The CLI detects it with
// errors.As to exit with the "invalid task" status.
type ValidationError struct {
	Problems []Problem
}

// Error is one problem per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each problem, as errors.Join would.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// problems collects Problems while a document is decoded.
type problems struct {
	list []Problem
}

func (ps *problems) add(path string, value any, format string, args ...any) {
	v := ""
	if value != nil {
		v = render(value)
	}
	ps.list = append(ps.list, Problem{Path: path, Value: v, Message: fmt.Sprintf(format, args...)})
}

// missing records a problem with no value to show: an absent or unknown
// field, a whole document, or a value that must not be echoed (a secret).
func (ps *problems) missing(path, format string, args ...any) {
	ps.list = append(ps.list, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps.list}
}

// render shows a decoded YAML value the way a user would write it.
func render(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case json.Number:
		return v.String()
	case bool:
		return fmt.Sprint(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// typeName names a decoded YAML value's kind for "is a list, not ..." messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

// UnknownField is the problem of a key outside known: "did you mean" the
// known name it is a typo or a common alias of, else the names there are.
func UnknownField(path, key string, known []string) Problem {
	s := suggest(key, known)
	if alias, ok := aliases()[strings.ToLower(key)]; ok && slices.Contains(known, alias) {
		s = alias
	}
	if s != "" {
		return Problem{Path: path, Message: fmt.Sprintf("unknown field; did you mean %q?", s)}
	}
	return Problem{Path: path, Message: "unknown field; expected one of " + strings.Join(known, ", ")}
}

// suggest returns the known name closest to name when it is close enough to
// be a likely typo, else "".
func suggest(name string, known []string) string {
	lname := strings.ToLower(name)
	best, bestDist := "", -1
	for _, k := range known {
		d := editDistance(lname, strings.ToLower(k))
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	// A third of the word, at least one edit: "memroy" and "job_recvery" are
	// typos; "zone" for "name" is not.
	limit := max(1, len(best)/3)
	if bestDist >= 0 && bestDist <= limit {
		return best
	}
	return ""
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and adjacent transpositions each cost one, since
// swapped letters are the most common typo.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// sortedKeys returns m's keys in order, so problems come out the same way
// every time.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
