package local

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"sortie/provision"
)

// attemptSpec is spec for the cluster of attempt n of a job.
func attemptSpec(name string, n int) provision.ClusterSpec {
	s := spec(name, pl("local", "local-a"), 1)
	s.Tags[provision.TagAttempt] = strconv.Itoa(n)
	return s
}

// startedNode makes in node directory node what a start and its task
// leave: HOME and the attempt's directory with its workdir, as a start
// makes them, and files in each.
func startedNode(t *testing.T, node string, attempt int) {
	t.Helper()
	a := filepath.Join(node, "attempt-"+strconv.Itoa(attempt))
	for _, d := range []string{filepath.Join(node, homeName), filepath.Join(a, "workdir")} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(node, homeName), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(node, homeName, ".bashrc"), filepath.Join(a, "log"), filepath.Join(a, "exit_code"),
		filepath.Join(a, "workdir", "out", "ckpt")} {
		os.MkdirAll(filepath.Dir(f), 0o777)
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// tree lists what is under dir, relative to it.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if p != dir {
			r, _ := filepath.Rel(dir, p)
			out = append(out, r)
		}
		return nil
	})
	return out
}

// A torn-down node's directories, emptied, are the next launch's node:
// nothing the task or its agent wrote is left, and the attempt's directory
// bears the new attempt's number.
func TestATornDownNodesDirectoriesAreTheNextLaunchs(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	a := attemptSpec("sortie-1-0-1", 1)
	if _, err := p.Launch(ctx, a); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(p.clusterDir(a.Name), "node-0")
	startedNode(t, node, 1)
	ino, cino, rino := inode(t, node), inode(t, p.clusterDir(a.Name)), inode(t, filepath.Join(p.clusterDir(a.Name), recordFile))
	if err := p.Terminate(ctx, a.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.clusterDir(a.Name)); !os.IsNotExist(err) {
		t.Fatalf("cluster %s is still there: %v", a.Name, err)
	}
	b := attemptSpec("sortie-2-0-3", 3)
	if _, err := p.Launch(ctx, b); err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(p.clusterDir(b.Name), "node-0")
	if got := inode(t, node); got != ino {
		t.Errorf("node directory is inode %d; want the torn-down node's %d", got, ino)
	}
	if got := inode(t, p.clusterDir(b.Name)); got != cino {
		t.Errorf("cluster directory is inode %d; want the torn-down cluster's %d", got, cino)
	}
	if got := inode(t, filepath.Join(p.clusterDir(b.Name), recordFile)); got != rino {
		t.Errorf("record is inode %d; want the torn-down cluster's %d", got, rino)
	}
	if c, err := p.Status(ctx, []string{b.Name}); err != nil || c[b.Name] == nil || c[b.Name].Tags[provision.TagAttempt] != "3" {
		t.Errorf("the reused record reads %+v, %v; want attempt 3's cluster", c[b.Name], err)
	}
	if got := tree(t, p.clusterDir(b.Name)); !slices.Equal(got, []string{"cluster.json", "node-0", "node-0/attempt-3", "node-0/attempt-3/workdir", "node-0/home"}) {
		t.Errorf("reused cluster holds %v", got)
	}
	if got, want := tree(t, node), []string{"attempt-3", "attempt-3/workdir", "home"}; !slices.Equal(got, want) {
		t.Errorf("reused node holds %v; want %v", got, want)
	}
	// The next one has none kept: it makes its directory.
	c := attemptSpec("sortie-3-0-1", 1)
	if _, err := p.Launch(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, filepath.Join(p.clusterDir(c.Name), "node-0")); len(got) != 0 {
		t.Errorf("a new node directory holds %v", got)
	}
}

// A node's directories that are not what a start makes are removed, never
// kept: nothing of a task's can reach another cluster, and nothing odd
// (a link, a mode a task gave, a file beside the directories) is reused.
func TestANodeUnlikeAStartsIsRemoved(t *testing.T) {
	for name, spoil := range map[string]func(node string) error{
		"a file beside":      func(n string) error { return os.WriteFile(filepath.Join(n, "x"), nil, 0o600) },
		"HOME's mode":        func(n string) error { return os.Chmod(filepath.Join(n, homeName), 0o755) },
		"workdir a link":     func(n string) error { return swap(filepath.Join(n, "attempt-1", "workdir")) },
		"two attempts":       func(n string) error { return os.Mkdir(filepath.Join(n, "attempt-2"), 0o777) },
		"no attempt":         func(n string) error { return os.RemoveAll(filepath.Join(n, "attempt-1")) },
		"an unreadable HOME": func(n string) error { return os.Chmod(filepath.Join(n, homeName), 0o000) },
	} {
		t.Run(name, func(t *testing.T) {
			p := newProvider(t)
			ctx := context.Background()
			s := attemptSpec("sortie-1-0-1", 1)
			if _, err := p.Launch(ctx, s); err != nil {
				t.Fatal(err)
			}
			node := filepath.Join(p.clusterDir(s.Name), "node-0")
			startedNode(t, node, 1)
			if err := spoil(node); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(filepath.Join(node, homeName), 0o700) })
			if err := p.Terminate(ctx, s.Name); err != nil && name != "an unreadable HOME" {
				t.Fatal(err)
			}
			if got, _ := p.spares().count(); got != 0 {
				t.Errorf("%d node directories kept; want none", got)
			}
		})
	}
}

// swap makes path a link to a directory elsewhere.
func swap(path string) error {
	other := path + ".real"
	if err := os.Rename(path, other); err != nil {
		return err
	}
	return os.Symlink(other, path)
}

// What a process that is gone kept is removed by the next one that keeps.
func TestSparesOfAGoneProcessAreRemoved(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	gone := filepath.Join(spareRoot(p.home), "2147483646.x", "node.1")
	if err := os.MkdirAll(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	s := attemptSpec("sortie-1-0-1", 1)
	if _, err := p.Launch(ctx, s); err != nil {
		t.Fatal(err)
	}
	startedNode(t, filepath.Join(p.clusterDir(s.Name), "node-0"), 1)
	if err := p.Terminate(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(gone)); !os.IsNotExist(err) {
		t.Errorf("a gone process's kept directories are still there: %v", err)
	}
	if got, _ := p.spares().count(); got != 1 {
		t.Errorf("%d node directories kept; want 1", got)
	}
}

// A kept cluster directory never takes the place of a build already there:
// the launch then builds beside it, and clears it once in place.
func TestAKeptClusterDirectoryLeavesABuildAlone(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	a := attemptSpec("sortie-1-0-1", 1)
	if _, err := p.Launch(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := p.Terminate(ctx, a.Name); err != nil {
		t.Fatal(err)
	}
	if _, kept := p.spares().count(); kept != 1 {
		t.Fatalf("%d cluster directories kept; want 1", kept)
	}
	b := attemptSpec("sortie-2-0-1", 1)
	left := filepath.Join(p.clustersDir(), ".new-"+b.Name, "node-0")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Launch(ctx, b); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, p.clustersDir()); !slices.Equal(got, []string{b.Name, b.Name + "/cluster.json", b.Name + "/node-0"}) {
		t.Errorf("clusters directory holds %v", got)
	}
	if _, kept := p.spares().count(); kept != 1 {
		t.Errorf("%d cluster directories kept; want the 1 not used", kept)
	}
}

// Where a rename cannot refuse to replace (a file system without
// RENAME_NOREPLACE), no cluster directory is kept: its reuse could take a
// build's place.
func TestNoClusterDirectoryIsKeptWhereRenamesReplace(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	p.spares().noReplaceless = true
	s := attemptSpec("sortie-1-0-1", 1)
	if _, err := p.Launch(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := p.Terminate(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if _, kept := p.spares().count(); kept != 0 {
		t.Errorf("%d cluster directories kept; want none", kept)
	}
	if _, err := os.Stat(p.clusterDir(s.Name)); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory is still there: %v", err)
	}
}
