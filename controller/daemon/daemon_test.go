package daemon

import (
	"path/filepath"
	"testing"
)

func TestBinaryPathFromTheEnvironmentIsAbsolute(t *testing.T) {
	got, err := BinaryPath(func(k string) string {
		if k == "SORTIE_CONTROLLER_BIN" {
			return "bin/sortie-controller"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	// The controller starts in SORTIE_HOME: a relative path would be
	// looked up there.
	if !filepath.IsAbs(got) || filepath.Base(got) != "sortie-controller" {
		t.Errorf("BinaryPath = %q, want an absolute path to bin/sortie-controller", got)
	}
}
