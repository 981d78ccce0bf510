package smoke_tests

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// make build strips every program (no symbol table, no DWARF), and a
// stripped sortie still says its module and Go version, read from the
// build info that stripping keeps.
func TestMakeBuildStrips(t *testing.T) {
	out, err := exec.Command("make", "-n", "-C", "..", "build").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	builds := 0
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, " build ") || !strings.Contains(line, "go") {
			continue
		}
		builds++
		if !strings.Contains(line, "-ldflags='-s -w'") {
			t.Errorf("make build runs %q, without -ldflags='-s -w'", line)
		}
	}
	if builds < 2 {
		t.Fatalf("make -n build printed %d go build lines, want the CLI's and the agent's:\n%s", builds, out)
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "sortie")
	if out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "sortie/cmd/sortie").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Symbols(); !errors.Is(err, elf.ErrNoSymbols) {
		t.Errorf("the stripped sortie has a symbol table (%v)", err)
	}
	if s := f.Section(".debug_info"); s != nil {
		t.Errorf("the stripped sortie has DWARF (.debug_info)")
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "SORTIE_HOME="+filepath.Join(dir, "home"))
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sortie version: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), "client:     sortie ") || !strings.Contains(string(got), runtime.Version()) {
		t.Errorf("the stripped sortie's version says %q, want its module and %s", got, runtime.Version())
	}
}
