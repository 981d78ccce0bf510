package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sortie/controller/contract"
)

// outputFlag validates -o.
func outputFlag(o string) error {
	if o != "table" && o != "json" {
		return usageErrorf("-o: %q is not an output format (table or json)", o)
	}
	return nil
}

// printJSON writes v as indented JSON: the one place -o json is written.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONList writes items as printJSON writes a slice, byte for byte,
// one item at a time: a list of many jobs is never indented whole in
// memory.
func printJSONList[T any](w io.Writer, items []T) error {
	l := newJSONList(w)
	for i := range items {
		if err := l.add(&items[i]); err != nil {
			return err
		}
	}
	return l.close()
}

// jsonList writes a JSON list as printJSON would, item by item as they
// come, so that a listing streamed from the store is never held whole.
type jsonList struct {
	bw       *bufio.Writer
	out      []byte
	nonEmpty bool
}

func newJSONList(w io.Writer) *jsonList { return &jsonList{bw: bufio.NewWriterSize(w, 64<<10)} }

func (l *jsonList) add(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if l.nonEmpty {
		l.bw.WriteString(",\n  ")
	} else {
		l.bw.WriteString("[\n  ")
	}
	l.nonEmpty = true
	l.out = indentJSON(l.out[:0], b, "  ")
	_, err = l.bw.Write(l.out)
	return err
}

func (l *jsonList) close() error {
	if l.nonEmpty {
		l.bw.WriteString("\n]\n")
	} else {
		l.bw.WriteString("[]\n")
	}
	return l.bw.Flush()
}

// indentJSON appends src, compact JSON as json.Marshal writes it, to dst
// indented as json.Indent(dst, src, prefix, "  ") would: it trusts src to
// be valid, which lets it skip json.Indent's validating scanner, most of
// the cost of printing a long list.
func indentJSON(dst, src []byte, prefix string) []byte {
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, "  "...)
		}
	}
	inString, escaped := false, false
	for i, c := range src {
		if inString {
			dst = append(dst, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			dst = append(dst, c)
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				continue // an empty object or array stays {} or []
			}
			depth++
			newline()
		case '}', ']':
			if i > 0 && (src[i-1] == '{' || src[i-1] == '[') {
				dst = append(dst, c)
				continue
			}
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// table writes aligned columns through a buffer: tabwriter writes each
// cell on its own, which unbuffered is a system call per cell.
type table struct {
	tw  *tabwriter.Writer
	buf *bufio.Writer
}

func newTable(w io.Writer, headers ...string) *table {
	buf := bufio.NewWriterSize(w, 64<<10)
	t := &table{tw: tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0), buf: buf}
	t.row(headers...)
	return t
}

// row writes one line of cells, each made printable: a tab or newline in
// a job's name would break the columns, an escape would drive the terminal.
func (t *table) row(cols ...string) {
	safe := make([]string, len(cols))
	for i, c := range cols {
		safe[i] = printable(c)
	}
	fmt.Fprintln(t.tw, strings.Join(safe, "\t"))
}
func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	return t.buf.Flush()
}

// ago says how long before now t was, as every table shows it.
func ago(now, t time.Time) string { return contract.Age(now.Sub(t)) + " ago" }

// duration is how long a job or attempt ran, as every table shows it.
func duration(start, end *time.Time, now time.Time) string { return contract.Elapsed(start, end, now) }

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func idOrDash(id *int64) string {
	if id == nil {
		return "-"
	}
	return strconv.FormatInt(*id, 10)
}

func parseIDs(args []string) ([]int64, error) {
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id <= 0 {
			return nil, usageErrorf("%q is not a job id (a positive number, as `sortie jobs queue` shows)", a)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
