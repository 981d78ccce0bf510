package local

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision"
)

// A local node's Attach runs in the node directory from a login's
// environment, not the caller's, with the caller's streams, and returns
// the status.
func TestAttachRunsInTheNodeDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SORTIE_TEST_LEAK", "controller's")
	r := &runner{dir: dir}
	var out strings.Builder
	code, err := r.Attach(context.Background(), `pwd; echo "[$SORTIE_TEST_LEAK] $TERM"; cat; exit 4`,
		provision.Stdio{In: strings.NewReader("in\n"), Out: &out, Term: "vt220"})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if want := real + "\n[] vt220\nin\n"; code != 4 || out.String() != want {
		t.Errorf("exit %d, out %q; want 4, %q", code, out.String(), want)
	}
	if code, _ := r.Attach(context.Background(), "kill -TERM $$", provision.Stdio{}); code != 143 {
		t.Errorf("killed by TERM: exit %d, want 143", code)
	}
}
