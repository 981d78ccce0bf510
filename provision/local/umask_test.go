package local

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"sortie/provision/node"
)

// Started under umask 000, a local node's directories and files (its
// directory, HOME, workdir, the agent's records, what the task itself
// makes) are writable by their owner alone: another user of the machine
// can change none of them.
func TestNodeFilesAreNotWritableByOthersUnderUmask000(t *testing.T) {
	p := newProvider(t)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ctx := context.Background()
	c, err := p.Launch(ctx, spec("sortie-30-0-1", pl("local", "local-a"), 1))
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Runner(ctx, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	r = node.ForAttempt(r, 1)
	if err := node.Start(ctx, r, node.StartSpec{Setup: "mkdir -p ~/.cache/x", Run: "mkdir -p out/deep && echo hi >out/deep/f && echo made"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "task done in "+r.Dir(), func() bool { return poll(t, r).Done })
	if st := poll(t, r); st.ExitCode != 0 {
		t.Fatalf("%+v", st)
	}
	seen := 0
	err = filepath.WalkDir(p.home, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		seen++
		if fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s is %v: writable by others", path, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(r.Dir(), "workdir", "out", "deep", "f")) || seen < 10 {
		t.Fatalf("the walk saw %d files, and not the task's own", seen)
	}
}
