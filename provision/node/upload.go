package node

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sortie/provision"
	"sortie/provision/node/agent"
)

// reserved reports whether name is one of the node directory's own entries,
// which an upload must not overwrite.
func reserved(name string) bool {
	switch name {
	case "agent", "begun", "notice", "notice-request.json", "env", "cwd", "setup.sh", "run.sh", "container.sh", "started", "pid", "phase",
		"pgid.setup", "pgid.run", "log", "exit_code", "stop",
		"sandbox.json", "mounts", "tmp":
		return true
	}
	return strings.HasPrefix(name, ".start.") || strings.HasSuffix(name, ".tmp")
}

// uploadBody unpacks a tar stream into $T. Once the task has started the
// upload is skipped: a controller that restarted repeats upload and start, and
// must not rewrite files under a running task.
const uploadBody = `
if [ -e "$D/started" ]; then
	cat >/dev/null
	exit 0
fi
case $T in /*) ;; "~"/*) T=$HOME/${T#"~/"} ;; *) T=$D/$T ;; esac
mkdir -p "$T"
tar -x -f - -C "$T" --no-same-owner
`

// uploadFileBody writes stdin to the file $T.
const uploadFileBody = `
if [ -e "$D/started" ]; then
	cat >/dev/null
	exit 0
fi
case $T in /*) ;; "~"/*) T=$HOME/${T#"~/"} ;; *) T=$D/$T ;; esac
mkdir -p "$(dirname "$T")"
cat >"$T.sortie-upload"
chmod "$MODE" "$T.sortie-upload"
mv -f "$T.sortie-upload" "$T"
`

// localError is err, from reading a source on this machine, as a
// precheck error when no retry fixes it: the source is missing or may not
// be read, and stays so on every node and attempt.
func localError(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return provision.Prechecks(err)
	}
	return err
}

// Upload copies localDir, skipping .git, into remoteSubdir on the node behind
// r: a path relative to r.Dir(), an absolute one (a file mount), or one
// under the node's HOME (~/...). On a node whose tasks run in a sandbox
// (Sandboxer), an absolute path lands in the node directory's mounts
// folder, which the sandbox shows at that path. When
// localDir is a regular file, remoteSubdir is the file's remote path. It does
// nothing once the task has started.
func Upload(ctx context.Context, r provision.Runner, localDir, remoteSubdir string) error {
	if err := checkRemote(remoteSubdir); err != nil {
		// The same path fails on every node and every attempt.
		return provision.Prechecks(fmt.Errorf("upload %s: %w", localDir, err))
	}
	if path.IsAbs(remoteSubdir) {
		sb, err := SandboxOf(r)
		if err != nil {
			return provision.Prechecks(fmt.Errorf("upload %s: %w", localDir, err))
		}
		if sb != nil {
			remoteSubdir = agent.MountsDir + path.Clean(remoteSubdir)
		}
	}
	info, err := os.Stat(localDir)
	if err != nil {
		return localError(fmt.Errorf("upload %s: %w", localDir, err))
	}
	if !info.Mode().IsRegular() && !info.IsDir() {
		return provision.Prechecks(fmt.Errorf("upload %s: neither a directory nor a regular file", localDir))
	}
	abs, err := filepath.Abs(localDir)
	if err != nil {
		return fmt.Errorf("upload %s: %w", localDir, err)
	}
	name := strings.TrimPrefix(filepath.ToSlash(abs), "/")
	if name == "" {
		name = "."
	}
	return uploadFS(ctx, r, os.DirFS("/"), name, localDir, remoteSubdir, localError)
}

// UploadFrom is Upload of name, a path inside root, read through root:
// a directory's tree or a single file. Every file is opened through the
// root, so no symlink, or chain of them, leads the copy outside it; a
// symlink of the tree is copied as a symlink. Errors name the file by its
// path in root, never by where root is. A server copies its users'
// uploads this way.
func UploadFrom(ctx context.Context, r provision.Runner, root *os.Root, name, remoteSubdir string) error {
	if err := checkRemote(remoteSubdir); err != nil {
		return provision.Prechecks(fmt.Errorf("upload %s: %w", name, err))
	}
	// The tree does not change: an error opening it is the same on every
	// attempt.
	return uploadFS(ctx, r, root.FS(), path.Clean(filepath.ToSlash(name)), name, remoteSubdir, provision.Prechecks)
}

// uploadFS copies name of fsys, a directory's tree or a single file, to
// remoteSubdir; label names it in errors, and openErr makes an error
// opening it a precheck error when no retry fixes it.
func uploadFS(ctx context.Context, r provision.Runner, fsys fs.FS, name, label, remoteSubdir string, openErr func(error) error) error {
	f, err := fsys.Open(name)
	if err != nil {
		return openErr(fmt.Errorf("upload %s: %w", label, err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("upload %s: %w", label, err)
	}
	if info.Mode().IsRegular() {
		mode := fmt.Sprintf("%o", info.Mode().Perm())
		s := script(uploadFileBody, "D", r.Dir(), "T", remoteSubdir, "MODE", mode)
		if _, err := r.Exec(ctx, s, f); err != nil {
			return fmt.Errorf("upload %s to %s: %w", label, remoteSubdir, err)
		}
		return nil
	}
	if !info.IsDir() {
		return provision.Prechecks(fmt.Errorf("upload %s: neither a directory nor a regular file", label))
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := writeTar(pw, fsys, name)
		pw.CloseWithError(err)
		done <- err
	}()
	_, err = r.Exec(ctx, script(uploadBody, "D", r.Dir(), "T", remoteSubdir), pr)
	// Unblock the writer if the remote side stopped reading early.
	pr.CloseWithError(errors.New("upload ended"))
	werr := <-done
	if werr != nil && !errors.Is(werr, io.ErrClosedPipe) && err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("upload %s to %s: %w", label, remoteSubdir, err)
	}
	return nil
}

// writeTar streams the tree dir of fsys to w, without .git entries,
// sockets or devices. fsys reads symlinks (fs.ReadLinkFS): an os.Root's FS
// opens nothing outside the root.
func writeTar(w io.Writer, fsys fs.FS, dir string) error {
	tw := tar.NewWriter(w)
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = fs.ReadLink(fsys, p); err != nil {
				return err
			}
		case info.IsDir(), info.Mode().IsRegular():
		default:
			return nil
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = p
		if dir != "." {
			h.Name = strings.TrimPrefix(p, dir+"/")
		}
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func checkRemote(p string) error {
	if p == "" {
		return errors.New(`remote path is empty; give a directory such as "workdir"`)
	}
	if path.IsAbs(p) {
		return nil
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if c := path.Clean(rest); c == "." || c == ".." || strings.HasPrefix(c, "../") {
			return fmt.Errorf("remote path %q leaves the node's HOME; give a path inside it", p)
		}
		return nil
	}
	clean := path.Clean(p)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("remote path %q leaves the node directory; give a path inside it or an absolute one", p)
	}
	first, _, _ := strings.Cut(clean, "/")
	if reserved(first) {
		return fmt.Errorf("remote path %q would overwrite the node agent's own %q; choose another name", p, first)
	}
	return nil
}
