package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sortie/controller/home"
)

// ControllerLogsOptions are `controller logs`' flags.
type ControllerLogsOptions struct {
	Follow bool
	Output string
}

// followPoll is how often `controller logs -f` looks for new lines.
const followPoll = 250 * time.Millisecond

// newCmdControllerLogs builds `controller logs`: $SORTIE_HOME/controller.log,
// the controller's slog JSON lines, printed readably.
func newCmdControllerLogs(f *Factory) *cobra.Command {
	opts := &ControllerLogsOptions{}
	cmd := &cobra.Command{
		Use:   "logs [-f] [-o json]",
		Short: "Print the controller's log: time, level, message and fields, one event a line; -f follows it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(opts.Output); err != nil {
				return err
			}
			path := home.ControllerLog(f.Home())
			file, err := os.Open(path)
			if errors.Is(err, os.ErrNotExist) {
				if !opts.Follow {
					fmt.Fprintf(f.Err, "No controller log yet (%s): the controller has not run in this home.\n", path)
					return nil
				}
				// Wait for the controller to write it.
				for errors.Is(err, os.ErrNotExist) {
					if !pollWait(cmd.Context()) {
						return nil
					}
					file, err = os.Open(path)
				}
			}
			if err != nil {
				return fmt.Errorf("read the controller log: %w", err)
			}
			defer file.Close()
			wait := func(context.Context) bool { return false }
			if opts.Follow {
				wait = pollWait
			}
			return copyControllerLog(cmd.Context(), file, f.Out, opts.Output == "json", wait)
		},
	}
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing lines as the controller writes them, until interrupted")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "table (readable lines) or json (the log's lines as they are)")
	return cmd
}

// pollWait waits followPoll; false when ctx ended first.
func pollWait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(followPoll):
		return true
	}
}

// copyControllerLog prints each whole line of r, readably or (raw) as it
// is. At the end of r it asks wait whether to look for more: a line
// still being written is printed once it is whole.
func copyControllerLog(ctx context.Context, r io.Reader, w io.Writer, raw bool, wait func(context.Context) bool) error {
	text := func(line []byte) string {
		if raw {
			return string(line)
		}
		return formatLogLine(line)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriter(w)
	var partial []byte
	for {
		chunk, err := br.ReadBytes('\n')
		partial = append(partial, chunk...)
		if err == nil {
			fmt.Fprintln(bw, text(bytes.TrimRight(partial, "\n")))
			partial = partial[:0]
			continue
		}
		if !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the controller log: %w", err)
		}
		if ferr := bw.Flush(); ferr != nil {
			return ferr
		}
		if !wait(ctx) {
			if len(partial) > 0 {
				fmt.Fprintln(w, text(partial)) // the last line, without its newline
			}
			return nil
		}
	}
}

// formatLogLine writes one slog JSON line as "TIME LEVEL MESSAGE k=v ...",
// the fields in the order the line has them; a line that is not a JSON
// object (a panic's trace, an older text log) is printed as it is,
// escaped.
func formatLogLine(line []byte) string {
	fields, ok := logFields(line)
	if !ok {
		return printable(string(line))
	}
	var when, level, msg string
	var rest []string
	for _, kv := range fields {
		switch kv[0] {
		case "time":
			when = logValue(kv[1])
			if t, err := time.Parse(time.RFC3339Nano, when); err == nil {
				when = t.Format("2006-01-02 15:04:05.000")
			}
		case "level":
			level = logValue(kv[1])
		case "msg":
			msg = logValue(kv[1])
		default:
			v := printable(kv[1]) // a number, a boolean, an object: as written
			if strings.HasPrefix(kv[1], `"`) {
				v = quoteIfNeeded(logValue(kv[1]))
			}
			rest = append(rest, printable(kv[0])+"="+v)
		}
	}
	s := fmt.Sprintf("%s %-5s %s", when, level, printable(msg))
	if len(rest) > 0 {
		s += "  " + strings.Join(rest, " ")
	}
	return s
}

// logFields reads a JSON object's members in their order: name and raw value.
func logFields(line []byte) ([][2]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out [][2]string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := t.(string)
		if !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, [2]string{key, string(v)})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	return out, true
}

// logValue is a raw JSON value as text: a string's content, anything else
// as written (numbers, booleans, null, objects).
func logValue(raw string) string {
	if strings.HasPrefix(raw, `"`) {
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil {
			return s
		}
	}
	return raw
}

// quoteIfNeeded quotes a field's value that would not read as one word.
func quoteIfNeeded(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\"=") || printable(v) != v {
		return strconv.Quote(v)
	}
	return v
}
