package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision/node"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUploadCopiesTheTreeWithoutGit(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"data.txt":        "hello\n",
		"sub/deeper/x.py": "print(1)\n",
		".git/HEAD":       "ref: main\n",
		"vendor/mod/.git": "gitdir: elsewhere\n",
		"it's $weird.txt": "odd name\n",
		"script.sh":       "#!/bin/sh\n",
	})
	if err := os.Chmod(filepath.Join(src, "script.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("data.txt", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	r := newNode(t)
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := node.Upload(context.Background(), r, src, "workdir"); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(r.dir, "workdir")
	for name, want := range map[string]string{
		"data.txt": "hello\n", "sub/deeper/x.py": "print(1)\n", "it's $weird.txt": "odd name\n", "link": "hello\n",
	} {
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	for _, name := range []string{".git", "vendor/mod/.git"} {
		if _, err := os.Lstat(filepath.Join(dst, name)); err == nil {
			t.Errorf("%s was uploaded", name)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dst, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link is not a symlink: %v, %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "script.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("script.sh lost its execute bit: %v, %v", fi, err)
	}

	// The task runs in the uploaded workdir.
	if err := node.Start(context.Background(), r, node.StartSpec{Run: "cat data.txt"}); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, r); st.ExitCode != 0 || readLog(t, r) != "hello\n" {
		t.Errorf("status %+v, log %q", st, readLog(t, r))
	}

	// Once started, an upload (a restarted controller repeating itself) changes nothing.
	writeTree(t, src, map[string]string{"data.txt": "changed\n"})
	if err := node.Upload(context.Background(), r, src, "workdir"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "data.txt")); string(b) != "hello\n" {
		t.Errorf("upload after start rewrote data.txt to %q", b)
	}
}

func TestUploadFileToAbsolutePath(t *testing.T) {
	src := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(src, []byte("weights"), 0o640); err != nil {
		t.Fatal(err)
	}
	r := newNode(t)
	dst := filepath.Join(t.TempDir(), "mnt", "model.bin")
	if err := node.Upload(context.Background(), r, src, dst); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil || string(b) != "weights" {
		t.Errorf("%s = %q, %v", dst, b, err)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", fi.Mode().Perm())
	}
}

func TestUploadRejectsPathsOutsideOrOverTheWrapper(t *testing.T) {
	src := t.TempDir()
	r := newNode(t)
	for _, p := range []string{"", ".", "..", "../x", "a/../../x", "log", "env/x", "exit_code"} {
		err := node.Upload(context.Background(), r, src, p)
		if err == nil {
			t.Errorf("Upload to %q succeeded", p)
		} else if !strings.Contains(err.Error(), "remote path") {
			t.Errorf("Upload to %q: %v, want an error about the remote path", p, err)
		}
	}
	if err := node.Upload(context.Background(), r, filepath.Join(src, "missing"), "workdir"); err == nil {
		t.Error("Upload of a missing directory succeeded")
	}
}

// An upload read through its root copies its tree, links as links, and
// no file or link that leads outside the root, however many steps the
// chain of links takes; errors name the file in the root, not the root.
func TestUploadFromStaysInTheRoot(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secrets/6.json": `{"TOKEN":"theirs"}`})
	tree := filepath.Join(outside, "uploads", "trees", "d")
	writeTree(t, tree, map[string]string{"code/a.txt": "a\n", "code/sub/b.txt": "b\n"})
	for link, target := range map[string]string{
		"code/sub/up": "../a.txt",
		"x/y/c":       "../..",
		"f":           "x/y/c/../../../secrets/6.json",
		"code/out":    "../../../../secrets",
	} {
		p := filepath.Join(tree, link)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	r := newNode(t)
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := node.UploadFrom(ctx, r, root, "code", "workdir"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n", "sub/up": "a\n"} {
		if b, err := os.ReadFile(filepath.Join(r.dir, "workdir", name)); err != nil || string(b) != want {
			t.Errorf("%s = %q %v, want %q", name, b, err, want)
		}
	}
	if l, err := os.Readlink(filepath.Join(r.dir, "workdir", "out")); err != nil || l != "../../../../secrets" {
		t.Errorf("the link out is %q %v; want it copied as a link", l, err)
	}
	if err := node.UploadFrom(ctx, r, root, "code/a.txt", "workdir/m.txt"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"f", "code/out/6.json"} {
		err := node.UploadFrom(ctx, r, root, name, "workdir/leak.json")
		if err == nil {
			t.Errorf("%s: copied through links that leave the root", name)
		} else if strings.Contains(err.Error(), outside) {
			t.Errorf("%s: %v names where the root is", name, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "workdir", "leak.json")); err == nil {
		t.Errorf("leak.json holds %q", b)
	}
}
