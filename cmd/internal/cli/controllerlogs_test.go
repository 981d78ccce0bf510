package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const endedLine = `{"time":"2026-11-30T12:00:01.123456789Z","level":"INFO","msg":"attempt ended","job":3,"task":0,"attempt":1,"cloud":"local","outcome":"preempted","reason":"node 0 preempted in local/local-a","exit_codes":"?"}`

func TestFormatLogLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{endedLine, `2026-11-30 12:00:01.123 INFO  attempt ended  job=3 task=0 attempt=1 cloud=local outcome=preempted reason="node 0 preempted in local/local-a" exit_codes=?`},
		{`{"time":"2026-11-30T12:00:02Z","level":"WARN","msg":"status","cloud":"aws","err":"a=b"}`, `2026-11-30 12:00:02.000 WARN  status  cloud=aws err="a=b"`},
		{`{"time":"2026-11-30T12:00:03Z","level":"ERROR","msg":"tick","n":{"a":1},"ok":true}`, `2026-11-30 12:00:03.000 ERROR tick  n={"a":1} ok=true`},
		{`{"time":"2026-11-30T12:00:04Z","level":"INFO","msg":"controller stopped"}`, `2026-11-30 12:00:04.000 INFO  controller stopped`},
		// Not JSON: printed as it is, escaped.
		{"panic: boom \x1b[31m", `panic: boom \x1b[31m`},
		{`{"msg": "half`, `{"msg": "half`},
		{`{"time":"2026-11-30T12:00:05Z","level":"INFO","msg":"x","name":"evil\u001b[2J"}`, `2026-11-30 12:00:05.000 INFO  x  name="evil\x1b[2J"`},
	} {
		if got := formatLogLine([]byte(tc.in)); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// -f prints what is there, then each line as it is written whole.
func TestFollowPrintsLinesAsTheyComeWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "controller.log")
	if err := os.WriteFile(path, []byte(endedLine+"\n"+`{"time":"2026-11-30T12:00:02Z","level":"INFO","msg":"par`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, raw := range []bool{false, true} {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(endedLine+"\n"+`{"time":"2026-11-30T12:00:02Z","level":"INFO","msg":"par`), 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		waits := 0
		err := copyControllerLog(context.Background(), f, &out, raw, func(context.Context) bool {
			waits++
			if waits == 1 {
				if strings.Count(out.String(), "\n") != 1 {
					t.Errorf("before the second line is whole, printed %q; want the first line only", out.String())
				}
				// The controller finishes the line and writes another.
				w, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				w.WriteString(`t"}` + "\n" + `{"time":"2026-11-30T12:00:03Z","level":"WARN","msg":"third","job":4}` + "\n")
				w.Close()
				return true
			}
			return false
		})
		if err != nil {
			t.Fatal(err)
		}
		want := "2026-11-30 12:00:01.123 INFO  attempt ended  job=3 task=0 attempt=1 cloud=local outcome=preempted reason=\"node 0 preempted in local/local-a\" exit_codes=?\n" +
			"2026-11-30 12:00:02.000 INFO  part\n2026-11-30 12:00:03.000 WARN  third  job=4\n"
		if raw {
			want = endedLine + "\n" + `{"time":"2026-11-30T12:00:02Z","level":"INFO","msg":"part"}` + "\n" + `{"time":"2026-11-30T12:00:03Z","level":"WARN","msg":"third","job":4}` + "\n"
		}
		if out.String() != want {
			t.Errorf("raw %v:\n got %q\nwant %q", raw, out.String(), want)
		}
	}
}

func TestControllerLogsCommand(t *testing.T) {
	f, out, errb := testFactory()
	h := t.TempDir()
	f.Getenv = func(k string) string {
		if k == "SORTIE_HOME" {
			return h
		}
		return ""
	}
	if code := Execute(f, []string{"controller", "logs"}); code != 0 || !strings.Contains(errb.String(), "No controller log yet") {
		t.Errorf("no log: exit %d, stderr %q", code, errb.String())
	}
	if err := os.WriteFile(filepath.Join(h, "controller.log"), []byte(endedLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := Execute(f, []string{"controller", "logs", "-o", "json"}); code != 0 || out.String() != endedLine+"\n" {
		t.Errorf("-o json: exit %d, printed %q", code, out.String())
	}
	out.Reset()
	if code := Execute(f, []string{"controller", "logs"}); code != 0 || !strings.HasPrefix(out.String(), "2026-11-30 12:00:01.123 INFO  attempt ended  job=3") {
		t.Errorf("readable: exit %d, printed %q", code, out.String())
	}
	if code := Execute(f, []string{"controller", "logs", "-o", "yaml"}); code != ExitUsage {
		t.Errorf("-o yaml: exit %d, want 2", code)
	}
}
