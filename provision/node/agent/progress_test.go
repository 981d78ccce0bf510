package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadProgress(t *testing.T) {
	long := strings.Repeat("9", maxProgressRead+10)
	tests := []struct {
		name    string
		content string
		want    int64
		ok      bool
	}{
		{"written over", "41200\n", 41200, true},
		{"without a newline", "7", 7, true},
		{"appended, one a line", "1\n2\n300\n", 300, true},
		{"appended, a long file", strings.Repeat("123456\n", 100) + "123457\n", 123457, true},
		{"blank lines after", "5\n\n  \n", 5, true},
		{"zero", "0\n", 0, true},
		{"negative", "-3\n", 0, false},
		{"not a number", "step 5\n", 0, false},
		{"a fraction", "1.5\n", 0, false},
		{"empty", "", 0, false},
		{"one line too long to be a number", long, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "value")
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			n, ok := ReadProgress(p)
			if n != tt.want || ok != tt.ok {
				t.Errorf("ReadProgress(%q) = %d, %v; want %d, %v", tt.content, n, ok, tt.want, tt.ok)
			}
		})
	}
	if _, ok := ReadProgress(filepath.Join(t.TempDir(), "none")); ok {
		t.Error("a missing file has progress")
	}
	// What a hostile task can put there instead: a FIFO (no writer: an
	// open that waited would never return), a link to another file.
	d := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(d, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "other"), []byte("12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(d, "other"), filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fifo", "link"} {
		if n, ok := ReadProgress(filepath.Join(d, name)); ok {
			t.Errorf("ReadProgress of a %s = %d, want none", name, n)
		}
	}
}

// TestProgressRecordedWhileRunningAndAtTheEnd: the task writes to
// $SORTIE_PROGRESS; the agent records it, tagged, at its interval while the
// task runs and once more before the exit code, and Answer reports it.
func TestProgressRecordedWhileRunningAndAtTheEnd(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	d := node(t, "", `echo 7 >"$SORTIE_PROGRESS"; read x <`+fifo+`; echo 41200 >>"$SORTIE_PROGRESS"; echo 3 >>"$SORTIE_PROGRESS.other"; exit 1`)
	killGroups(t, d)
	key := make([]byte, KeySize)
	key[0] = 1
	a := newAgent(t, d)
	a.Key = key
	tick := make(chan time.Time)
	asked := make(chan struct{}, 10)
	a.ProgressAfter = func(time.Duration) <-chan time.Time {
		asked <- struct{}{}
		return tick
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	// Opening the fifo waits for the task's read: it has written 7.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-asked
	tick <- time.Now()
	<-asked // the watcher looks again: it recorded what it read
	want := "7 " + ProgressTag(key, 7) + "\n"
	if got := read(t, d+"/record/progress"); got != want {
		t.Errorf("record/progress while running = %q, want %q", got, want)
	}
	f.WriteString("go\n")
	f.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want = "41200 " + ProgressTag(key, 41200) + "\n"
	if got := read(t, d+"/record/progress"); got != want {
		t.Errorf("record/progress at the end = %q, want %q", got, want)
	}
	out, err := Answer(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "\nprogress="+strings.TrimSuffix(want, "\n")+"\n") {
		t.Errorf("Answer = %q, want the progress record in it", out)
	}
	if !CheckProgressTag(key, 41200, ProgressTag(key, 41200)) || CheckProgressTag(key, 41201, ProgressTag(key, 41200)) ||
		CheckProgressTag(make([]byte, KeySize), 41200, ProgressTag(key, 41200)) {
		t.Error("CheckProgressTag takes a tag of another number or key")
	}
}

// TestProgressKeepsTheHighest: a lower number read later (a task resumed
// from an older checkpoint) does not lower the record.
func TestProgressKeepsTheHighest(t *testing.T) {
	d := node(t, "", "exit 0")
	if err := os.Mkdir(filepath.Join(d, ProgressDir), 0o755); err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, d)
	for _, n := range []string{"10\n", "3\n"} {
		if err := os.WriteFile(ProgressPath(d), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
		a.recordProgress()
	}
	if got := read(t, d+"/record/progress"); got != "10\n" {
		t.Errorf("record/progress = %q, want the highest, 10, untagged without a key", got)
	}
}
