package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// FileSandbox, in the node directory, says the task's phases run in a
// sandbox (bubblewrap): its JSON is a Sandbox. Without it they run on the
// machine itself.
const FileSandbox = "sandbox.json"

// MountsDir is the node directory's folder that holds the files of the
// task's absolute file_mounts destinations, at their paths below it
// (mounts/data/x for /data/x): the sandbox shows each at its destination,
// and they go with the node.
const MountsDir = "mounts"

// TmpDir is the node directory's folder that is /tmp in the sandbox: the
// same for setup and run, gone with the node.
const TmpDir = "tmp"

// Sandbox is how the phases of a task on this machine are confined. The
// sandbox shows the host read-only; the node directory read-only (the
// agent's records stay out of the task's reach); the working directory,
// HOME and the node's tmp (as /tmp) writable; each of Mounts at its path;
// none of Hide. The task runs in PID, IPC and user namespaces of its own,
// with no capabilities: it sees and signals its own processes only.
type Sandbox struct {
	// Program is the bubblewrap program (bwrap).
	Program string `json:"program"`
	// Hide are directories the task must not see at all (the sortie home,
	// with its store, secrets and the other nodes); each is an empty
	// directory in the sandbox.
	Hide []string `json:"hide,omitempty"`
	// Mounts are absolute file_mounts destinations, served from
	// MountsDir.
	Mounts []string `json:"mounts,omitempty"`
}

// ReadSandbox reads the node directory's sandbox; nil when it has none.
func ReadSandbox(dir string) (*Sandbox, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileSandbox))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Sandbox
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", FileSandbox, err)
	}
	if s.Program == "" {
		return nil, fmt.Errorf("%s names no program", FileSandbox)
	}
	return &s, nil
}

// Args are bubblewrap's arguments, before "--" and the command, for a
// phase of the task in node directory dir with working directory w and
// HOME home. infoFD is the descriptor bubblewrap writes the sandboxed
// process's pid to (-1: none).
//
// A destination whose folder is missing on the host needs a writable
// place for its mount point: the nearest folder that has it is rebuilt
// in the sandbox as an empty one holding the host's entries, read-only,
// and the mount point.
func (s *Sandbox) Args(dir, w, home string, infoFD int) ([]string, error) {
	args := []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--new-session", "--as-pid-1", "--die-with-parent", "--cap-drop", "ALL"}
	if infoFD >= 0 {
		args = append(args, "--info-fd", fmt.Sprint(infoFD))
	}
	// Paths the sandbox makes writable or its own: a mount point under
	// them needs no rebuilt folder.
	own := []string{"/tmp", "/dev", "/proc", w, home}
	own = append(own, s.Hide...)
	mounts := cleanMounts(s.Mounts)
	split := map[string]bool{}
	for _, m := range mounts {
		if under(m, dir) {
			return nil, fmt.Errorf("file_mounts %s: inside the node directory, which the task sees read-only", m)
		}
		if m == "/" || under(m, "/proc") || under(m, "/dev") {
			return nil, fmt.Errorf("file_mounts %s: not a destination a sandboxed task can have", m)
		}
		if a := missingParent(m); a != "" && !underAny(a, own) {
			split[a] = true
		}
	}
	if split["/"] {
		r, err := rebuild("/", map[string]bool{"dev": true, "proc": true, "tmp": true})
		if err != nil {
			return nil, err
		}
		args = append(args, r...)
	} else {
		args = append(args, "--ro-bind", "/", "/")
	}
	var dirs []string
	for a := range split {
		if a != "/" {
			dirs = append(dirs, a)
		}
	}
	// Shallower first: a deeper rebuild lands inside a shallower one.
	sort.Slice(dirs, func(i, j int) bool {
		return strings.Count(dirs[i], "/") < strings.Count(dirs[j], "/") || dirs[i] < dirs[j]
	})
	for _, a := range dirs {
		r, err := rebuild(a, nil)
		if err != nil {
			return nil, err
		}
		args = append(args, "--tmpfs", a)
		args = append(args, r...)
	}
	// /tmp before what lies under it (a sortie home in /tmp).
	args = append(args, "--dev-bind", "/dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc",
		"--bind", filepath.Join(dir, TmpDir), "/tmp")
	for _, h := range s.Hide {
		args = append(args, "--tmpfs", filepath.Clean(h))
	}
	progress := filepath.Join(dir, ProgressDir)
	args = append(args, "--ro-bind", dir, dir, "--bind-try", progress, progress, "--bind", home, home)
	if w != home {
		args = append(args, "--bind", w, w)
	}
	for _, m := range mounts {
		args = append(args, "--bind", filepath.Join(dir, MountsDir, m), m)
	}
	args = append(args, "--chdir", w)
	return args, nil
}

// cleanMounts is the absolute destinations of ms, cleaned, once each,
// shallower first so that a mount inside another's folder lands on it.
func cleanMounts(ms []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		m = filepath.Clean(m)
		if !filepath.IsAbs(m) || seen[m] {
			continue
		}
		seen[m] = true
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Count(out[i], "/") < strings.Count(out[j], "/") || out[i] < out[j] })
	return out
}

// missingParent is the nearest folder of path p that exists on the host
// when p does not, "" when p exists.
func missingParent(p string) string {
	if _, err := os.Lstat(p); err == nil {
		return ""
	}
	for {
		parent := filepath.Dir(p)
		if fi, err := os.Stat(parent); err == nil && fi.IsDir() {
			return parent
		}
		if parent == p {
			return "/"
		}
		p = parent
	}
}

// rebuild lists host folder a's entries as bubblewrap arguments that
// show each read-only (symbolic links as links), leaving out skip.
func rebuild(a string, skip map[string]bool) ([]string, error) {
	ents, err := os.ReadDir(a)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	var args []string
	for _, e := range ents {
		if skip[e.Name()] {
			continue
		}
		p := filepath.Join(a, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			t, err := os.Readlink(p)
			if err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
			args = append(args, "--symlink", t, p)
			continue
		}
		args = append(args, "--ro-bind", p, p)
	}
	return args, nil
}

// under reports whether p is d or inside it.
func under(p, d string) bool {
	d = filepath.Clean(d)
	return p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/")
}

func underAny(p string, ds []string) bool {
	return slices.ContainsFunc(ds, func(d string) bool { return d != "" && under(p, d) })
}
