package profiling

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProfiling(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{
		"SORTIE_CPUPROFILE": filepath.Join(dir, "cpu.pprof"),
		"SORTIE_MEMPROFILE": filepath.Join(dir, "mem.pprof"),
		"SORTIE_PPROF":      "127.0.0.1:0",
	}
	stop, err := Start(func(k string) string { return env[k] }, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	stop()
	for _, name := range []string{"cpu.pprof", "mem.pprof"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, want a profile", name, err)
		}
	}
	_, err = Start(func(k string) string {
		if k == "SORTIE_PPROF" {
			return "not an address"
		}
		return ""
	}, slog.Default())
	if err == nil || !strings.Contains(err.Error(), "SORTIE_PPROF") {
		t.Errorf("bad SORTIE_PPROF: %v, want an error naming it", err)
	}
	stop, err = Start(func(string) string { return "" }, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	stop()
}
