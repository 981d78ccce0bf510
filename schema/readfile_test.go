package schema

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadFileRefusesWhatIsNotAFile: /dev/zero would fill memory and a
// FIFO would block forever; both are refused at once, naming what they are.
func TestReadFileRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "task.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "/dev/zero is a character device, not a regular file",
		fifo:        fifo + " is a named pipe (FIFO), not a regular file",
		dir:         dir + " is a directory, not a regular file",
		big:         "is 16777217 bytes, over the limit of 16777216 (16 MiB)",
	} {
		b, err := ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadFile(%s) = %d bytes, %v; want an error with %q", path, len(b), err, want)
		}
	}
}

func TestReadFileReadsARegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(path, []byte("run: echo hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := path + ".link"
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, link} {
		b, err := ReadFile(p)
		if err != nil || string(b) != "run: echo hi\n" {
			t.Errorf("ReadFile(%s) = %q, %v", p, b, err)
		}
	}
}

// TestIgnoreFileThatIsAFIFO: the input key reads the workdir's .gitignore;
// a FIFO there is refused rather than blocking the launch.
func TestIgnoreFileThatIsAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, ".gitignore"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadIgnore(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("loadIgnore with a FIFO .gitignore: %v; want it refused", err)
	}
}
