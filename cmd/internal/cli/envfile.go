package cli

import (
	"fmt"
	"regexp"
	"strings"
)

// parseEnvFile reads a dotenv file as SkyPilot's --env-file does (it uses
// python-dotenv): KEY=VALUE lines, an optional "export " before the key,
// blank lines and # comments, a comment after an unquoted value when a
// space precedes the #, 'single' and "double" quoted values (which may
// span lines; \n, \t and the like are escapes in double quotes, only \'
// and \\ in single ones), and ${VAR} or ${VAR:-default} replaced by an
// earlier key of the file, else the caller's environment, else the
// default or nothing.
//
// Where python-dotenv warns and goes on, this refuses, naming the line:
// a line it cannot read, and a key without a value, which SkyPilot would
// pass on as unset and fail on later.
func parseEnvFile(text string, lookup func(string) (string, bool)) (map[string]string, error) {
	text = strings.TrimPrefix(text, "\ufeff")
	out := map[string]string{}
	r := &envReader{s: text, line: 1}
	for {
		r.skip(multilineSpace)
		if r.done() {
			break
		}
		line := r.line
		key, value, hasValue, err := r.binding()
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		if key == "" {
			continue // a comment
		}
		if !envKey.MatchString(key) {
			return nil, fmt.Errorf("line %d: %s is not a valid variable name; use letters, digits and _, not starting with a digit", line, key)
		}
		if !hasValue {
			return nil, fmt.Errorf("line %d: %s has no value; write %s=VALUE", line, key, key)
		}
		value = expandVars(value, func(name string) (string, bool) {
			if v, ok := out[name]; ok {
				return v, true
			}
			return lookup(name)
		})
		out[key] = value
	}
	return out, nil
}

var (
	multilineSpace = regexp.MustCompile(`^\s*`)
	lineSpace      = regexp.MustCompile(`^[^\S\r\n]*`)
	exportWord     = regexp.MustCompile(`^(?:export[^\S\r\n]+)?`)
	quotedKey      = regexp.MustCompile(`^'([^']+)'`)
	unquotedKey    = regexp.MustCompile(`^([^=#\s]+)`)
	equalSign      = regexp.MustCompile(`^=[^\S\r\n]*`)
	singleQuoted   = regexp.MustCompile(`^'((?:\\'|[^'])*)'`)
	doubleQuoted   = regexp.MustCompile(`^"((?:\\"|[^"])*)"`)
	unquotedValue  = regexp.MustCompile(`^[^\r\n]*`)
	trailingNote   = regexp.MustCompile(`\s+#.*`)
	comment        = regexp.MustCompile(`^(?:[^\S\r\n]*#[^\r\n]*)?`)
	endOfLine      = regexp.MustCompile(`^[^\S\r\n]*(?:\r\n|\n|\r|$)`)
	doubleEscapes  = strings.NewReplacer(`\\`, `\`, `\'`, `'`, `\"`, `"`, `\a`, "\a", `\b`, "\b", `\f`, "\f", `\n`, "\n", `\r`, "\r", `\t`, "\t", `\v`, "\v")
	singleEscapes  = strings.NewReplacer(`\\`, `\`, `\'`, `'`)
	variable       = regexp.MustCompile(`\$\{([^}:]*)(?::-([^}]*))?\}`)
	envKey         = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

type envReader struct {
	s    string
	line int
}

func (r *envReader) done() bool { return r.s == "" }

// skip consumes re's match at the start, which every pattern above can
// make empty, and counts the lines it crossed.
func (r *envReader) skip(re *regexp.Regexp) string {
	m := re.FindString(r.s)
	r.line += strings.Count(strings.ReplaceAll(m, "\r\n", "\n"), "\n") + strings.Count(strings.ReplaceAll(m, "\r\n", ""), "\r")
	r.s = r.s[len(m):]
	return m
}

func (r *envReader) submatch(re *regexp.Regexp) (string, bool) {
	m := re.FindStringSubmatch(r.s)
	if m == nil {
		return "", false
	}
	r.skip(re)
	return m[1], true
}

// binding reads one KEY=VALUE, a KEY alone, or a comment (key "").
func (r *envReader) binding() (key, value string, hasValue bool, err error) {
	r.skip(exportWord)
	switch {
	case strings.HasPrefix(r.s, "#"):
	case strings.HasPrefix(r.s, "'"):
		if key, _ = r.submatch(quotedKey); key == "" {
			return "", "", false, fmt.Errorf("a quoted key is not closed")
		}
	default:
		key, _ = r.submatch(unquotedKey)
	}
	r.skip(lineSpace)
	if key != "" && strings.HasPrefix(r.s, "=") {
		spaced := len(r.skip(equalSign)) > 1
		hasValue = true
		switch {
		case strings.HasPrefix(r.s, "'"):
			v, ok := r.submatch(singleQuoted)
			if !ok {
				return "", "", false, fmt.Errorf("the value of %s opens a ' quote that is not closed", key)
			}
			value = singleEscapes.Replace(v)
		case strings.HasPrefix(r.s, `"`):
			v, ok := r.submatch(doubleQuoted)
			if !ok {
				return "", "", false, fmt.Errorf(`the value of %s opens a " quote that is not closed`, key)
			}
			value = doubleEscapes.Replace(v)
		default:
			v := r.skip(unquotedValue)
			if !(spaced && strings.HasPrefix(v, "#")) {
				value = strings.TrimRight(trailingNote.ReplaceAllString(v, ""), " \t\r\n\f\v")
			}
		}
	}
	r.skip(comment)
	if r.skip(endOfLine) == "" && !r.done() {
		return "", "", false, fmt.Errorf("cannot read %q; write KEY=VALUE, quoting a value that holds spaces and #", strings.TrimSpace(firstLine(r.s)))
	}
	return key, value, hasValue, nil
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// expandVars replaces ${NAME} and ${NAME:-default} as python-dotenv does:
// an unknown name without a default becomes "".
func expandVars(s string, lookup func(string) (string, bool)) string {
	return variable.ReplaceAllStringFunc(s, func(m string) string {
		sub := variable.FindStringSubmatch(m)
		if v, ok := lookup(sub[1]); ok {
			return v
		}
		return sub[2]
	})
}
