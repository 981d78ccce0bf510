package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// printable makes text from a job (its name, a reason, an override, a
// cloud's message) safe to print on a terminal: control characters (an
// ANSI escape, a newline, a tab that would break a table's columns),
// Unicode's invisible direction and line controls, and bytes that are not
// UTF-8 are written escaped, as \x1b, \n, \u202e or \xff. Every table
// cell and every message built from such text goes through it; -o json
// output does not, and keeps the text exact.
func printable(s string) string { return escapeText(s, false) }

// printableLines is printable for a message of several lines: its line
// breaks are kept, everything else is escaped.
func printableLines(s string) string { return escapeText(s, true) }

func escapeText(s string, keepNewlines bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case keepNewlines && r == '\n', !needsEscape(r, size):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// needsEscape says whether a rune (size bytes long) is one a terminal
// acts on or does not show: C0 and C1 controls, DEL, the bidirectional
// and line-separator controls that can reorder or hide what follows, and
// a byte that is not UTF-8.
func needsEscape(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x200e && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}
