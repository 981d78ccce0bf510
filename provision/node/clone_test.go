package node_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision/node"
)

// gitRepo makes a bare repository with a main branch (two commits, the
// first tagged v1) and a dev branch, and returns its file:// URL and the
// first commit.
func gitRepo(t *testing.T) (url, first string) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(src, "f"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	run("init", "-q", "-b", "main")
	write("one\n")
	run("add", "f")
	run("commit", "-qm", "one")
	run("tag", "v1")
	first = run("rev-parse", "HEAD")
	run("checkout", "-qb", "dev")
	write("dev\n")
	run("commit", "-qam", "dev")
	run("checkout", "-q", "main")
	write("two\n")
	run("commit", "-qam", "two")
	run("clone", "-q", "--bare", src, filepath.Join(dir, "repo.git"))
	return "file://" + filepath.Join(dir, "repo.git"), first
}

func TestCloneAtEachKindOfRef(t *testing.T) {
	url, first := gitRepo(t)
	for _, tc := range []struct{ ref, want string }{
		{"", "two"}, {"main", "two"}, {"dev", "dev"}, {"v1", "one"}, {first, "one"}, {first[:10], "one"},
	} {
		t.Run("ref="+tc.ref, func(t *testing.T) {
			r := newNode(t)
			if err := node.Clone(context.Background(), r, url, tc.ref, "workdir"); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(r.Dir(), "workdir", "f"))
			if err != nil || string(b) != tc.want+"\n" {
				t.Errorf("workdir/f = %q (%v), want %q", b, err, tc.want)
			}
			out, err := exec.Command("git", "-C", filepath.Join(r.Dir(), "workdir"), "status", "--porcelain").CombinedOutput()
			if err != nil || len(out) != 0 {
				t.Errorf("the clone is not clean: %s (%v)", out, err)
			}
			// Again, as a controller that restarted does: the same tree.
			if err := node.Clone(context.Background(), r, url, tc.ref, "workdir"); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(r.Dir(), "workdir", "f")); string(b) != tc.want+"\n" {
				t.Errorf("after a second clone workdir/f = %q", b)
			}
			if left, _ := filepath.Glob(filepath.Join(r.Dir(), ".clone.*")); len(left) != 0 {
				t.Errorf("clone left %v", left)
			}
		})
	}
}

func TestClonePrechecks(t *testing.T) {
	url, _ := gitRepo(t)
	ctx := context.Background()
	var pe *node.PrecheckError
	err := node.Clone(ctx, newNode(t), url, "no-such-branch", "workdir")
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "workdir.ref: no-such-branch is not a branch, tag or commit of "+url) {
		t.Errorf("Clone at a missing ref = %v, want a PrecheckError naming the ref", err)
	}
	err = node.Clone(ctx, newNode(t), url+"-gone", "main", "workdir")
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "clone "+url+"-gone") {
		t.Errorf("Clone of a missing repository = %v, want a PrecheckError naming it", err)
	}

	// A node without git: a PATH holding bash alone.
	bin := t.TempDir()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bash, filepath.Join(bin, "bash")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	err = node.Clone(ctx, newNode(t), url, "main", "workdir")
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "git is not installed on the node") {
		t.Errorf("Clone on a node without git = %v, want a PrecheckError saying so", err)
	}
}

// Once the task has started, a Clone (a restarted controller repeating
// the start) leaves its workdir alone.
func TestCloneAfterStartDoesNothing(t *testing.T) {
	url, _ := gitRepo(t)
	r := newNode(t)
	ctx := context.Background()
	if err := node.Clone(ctx, r, url, "main", "workdir"); err != nil {
		t.Fatal(err)
	}
	if err := node.Start(ctx, r, node.StartSpec{Run: "cat f; echo changed >f"}); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, r); st.ExitCode != 0 {
		t.Fatalf("task exited %d: %s", st.ExitCode, readLog(t, r))
	}
	if got := readLog(t, r); got != "two\n" {
		t.Errorf("the task saw %q in its workdir, want the clone's two", got)
	}
	if err := node.Clone(ctx, r, url, "dev", "workdir"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Dir(), "workdir", "f")); string(b) != "changed\n" {
		t.Errorf("a Clone after the start rewrote the workdir: f = %q", b)
	}
}
