package bucket

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sortie/provision/node/agent"
)

// Files of a node directory the sync reads and writes (beside the agent's).
const (
	// FileSpec is the node's buckets, as the controller wrote them.
	FileSpec = agent.FileStorage
	// FileState is what the syncs did, per mount; the agent reports it.
	FileState = agent.FileStorageState
	// stateDir, beside the attempts' directories, holds the manifests, so
	// that a restart on the same cluster fetches only what changed.
	stateDir = ".sortie-storage"
)

// Spec is a node's buckets.
type Spec struct {
	// IntervalMs is how often what changed in the MOUNT_CACHED mounts is
	// uploaded; 0 uploads only at the end.
	IntervalMs int64       `json:"interval_ms"`
	Mounts     []SpecMount `json:"mounts"`
}

// SpecMount is one bucket at a path on the node.
type SpecMount struct {
	// Path is absolute, or relative to the task's working directory.
	Path   string `json:"path"`
	Store  string `json:"store"`
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix,omitempty"`
	Mode   string `json:"mode"`
}

// Cached says whether what the task writes there is uploaded.
func (m SpecMount) Cached() bool { return m.Mode == "MOUNT_CACHED" }

// MountState is what the syncs of one mount did, as the agent reports it.
type MountState = agent.MountSync

// ReadSpec reads the node directory's spec.
func ReadSpec(dir string) (Spec, error) {
	var s Spec
	b, err := os.ReadFile(filepath.Join(dir, FileSpec))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("read %s: %w", FileSpec, err)
	}
	return s, nil
}

// ReadState reads the node directory's state; none is an empty list.
func ReadState(dir string) ([]MountState, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileState))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s []MountState
	return s, json.Unmarshal(b, &s)
}

func writeState(dir string, s []MountState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, FileState+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, FileState))
}

// Node syncs a node directory's buckets.
type Node struct {
	// Dir is the node (attempt) directory.
	Dir string
	// Home is the HOME of the node's phases, where a ~/ path is.
	Home string
	// Open opens a store by name.
	Open func(ctx context.Context, store string) (Store, error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// LookPath finds a FUSE program (MOUNT); nil is exec.LookPath.
	LookPath func(string) (string, error)
	// Mount runs a FUSE program; nil runs it with exec.
	Mount func(ctx context.Context, argv []string) error
}

func (n Node) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

// local is where a mount's path is on the node: a ~/ one in the node's
// HOME; an absolute one at its path, or, on a node whose tasks run in a
// sandbox, in the node directory's mounts folder, which the sandbox shows
// at that path (the machine's own path is never written); any other
// under the working directory.
func (n Node) local(m SpecMount) (string, error) {
	if m.Path == "~" || strings.HasPrefix(m.Path, "~/") {
		if n.Home == "" {
			return "", fmt.Errorf("%s: the node's HOME is not known", m.Path)
		}
		return filepath.Join(n.Home, strings.TrimPrefix(m.Path, "~")), nil
	}
	if filepath.IsAbs(m.Path) {
		sb, err := agent.ReadSandbox(n.Dir)
		if err != nil {
			return "", fmt.Errorf("read the node's sandbox: %w", err)
		}
		if sb != nil {
			return filepath.Join(n.Dir, agent.MountsDir, filepath.Clean(m.Path)), nil
		}
		return m.Path, nil
	}
	cwd, err := agent.ReadCwd(n.Dir)
	if err != nil {
		return "", fmt.Errorf("read the working directory: %w", err)
	}
	return filepath.Join(cwd, m.Path), nil
}

// manifestPath keeps one manifest per mount and local path, beside the
// attempts' directories.
func (n Node) manifestPath(m SpecMount, local string) (string, error) {
	dir := filepath.Join(filepath.Dir(n.Dir), stateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(strings.Join([]string{m.Store, m.Bucket, m.Prefix, local}, "\x00")))
	return filepath.Join(dir, hex.EncodeToString(h[:8])+".json"), nil
}

// FUSE programs for MOUNT, per store.
var fusePrograms = map[string][]string{"s3": {"mount-s3", "mountpoint-s3"}, "gcs": {"gcsfuse"}}

// MissingFUSE says which program a MOUNT of store needs when the node has
// none of them, "" when it has one.
func MissingFUSE(store string, look func(string) (string, error)) string {
	if look == nil {
		look = exec.LookPath
	}
	for _, p := range fusePrograms[store] {
		if _, err := look(p); err == nil {
			return ""
		}
	}
	return strings.Join(fusePrograms[store], " or ")
}

// Down downloads every COPY and MOUNT_CACHED mount, and mounts every
// MOUNT one with the node's FUSE program.
func (n Node) Down(ctx context.Context) error {
	return n.each(ctx, func(ctx context.Context, m SpecMount, st *MountState) error {
		local, err := n.local(m)
		if err != nil {
			return err
		}
		if m.Mode == "MOUNT" {
			return n.fuse(ctx, m, local)
		}
		res, err := n.move(ctx, m, local, Mount.Down)
		if err != nil {
			return err
		}
		at := n.now().UTC()
		st.DownloadedAt, st.DownloadedBytes = &at, res.Bytes
		return nil
	})
}

// Up uploads what changed in every MOUNT_CACHED mount.
func (n Node) Up(ctx context.Context) error {
	return n.each(ctx, func(ctx context.Context, m SpecMount, st *MountState) error {
		if !m.Cached() {
			return nil
		}
		local, err := n.local(m)
		if err != nil {
			return err
		}
		res, err := n.move(ctx, m, local, Mount.Up)
		if err != nil {
			return err
		}
		at := n.now().UTC()
		st.UploadedAt, st.UploadedBytes = &at, res.Bytes
		st.UploadedTotal += res.Bytes
		return nil
	})
}

func (n Node) fuse(ctx context.Context, m SpecMount, local string) error {
	look := n.LookPath
	if look == nil {
		look = exec.LookPath
	}
	var prog string
	for _, p := range fusePrograms[m.Store] {
		if _, err := look(p); err == nil {
			prog = p
			break
		}
	}
	if prog == "" {
		return fmt.Errorf("mode MOUNT needs %s on the node; use mode: MOUNT_CACHED", MissingFUSE(m.Store, look))
	}
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	var argv []string
	if m.Store == "gcs" {
		argv = []string{prog}
		if m.Prefix != "" {
			argv = append(argv, "--only-dir", strings.TrimSuffix(m.Prefix, "/"))
		}
		argv = append(argv, m.Bucket, local)
	} else {
		argv = []string{prog, "--allow-delete", "--allow-overwrite"}
		if m.Prefix != "" {
			argv = append(argv, "--prefix", m.Prefix)
		}
		argv = append(argv, m.Bucket, local)
	}
	if n.Mount != nil {
		return n.Mount(ctx, argv)
	}
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n Node) move(ctx context.Context, m SpecMount, local string, op func(Mount, context.Context, Manifest) (Result, error)) (Result, error) {
	st, err := n.Open(ctx, m.Store)
	if err != nil {
		return Result{}, err
	}
	mp, err := n.manifestPath(m, local)
	if err != nil {
		return Result{}, err
	}
	man, err := LoadManifest(mp)
	if err != nil {
		return Result{}, err
	}
	res, err := op(Mount{Store: st, Bucket: m.Bucket, Prefix: m.Prefix, Dir: local}, ctx, man)
	if res.Files == 0 && err == nil {
		return res, nil // the manifest is as it was
	}
	// What moved before an error is recorded: it need not move again.
	if serr := man.Save(mp); err == nil {
		err = serr
	}
	return res, err
}

// each runs f on every mount, in order, recording its state (and error)
// in the state file; the first error is returned after all have run.
func (n Node) each(ctx context.Context, f func(context.Context, SpecMount, *MountState) error) error {
	spec, err := ReadSpec(n.Dir)
	if err != nil {
		return err
	}
	states, _ := ReadState(n.Dir)
	byPath := map[string]MountState{}
	for _, s := range states {
		byPath[s.Path] = s
	}
	var first error
	out := make([]MountState, len(spec.Mounts))
	for i, m := range spec.Mounts {
		st := byPath[m.Path]
		st.Path, st.Store, st.Bucket, st.Mode = m.Path, m.Store, m.Bucket, m.Mode
		if err := f(ctx, m, &st); err != nil {
			err = fmt.Errorf("%s (%s://%s/%s): %w", m.Path, scheme(m.Store), m.Bucket, m.Prefix, err)
			st.Error = err.Error()
			if first == nil {
				first = err
			}
		} else {
			st.Error = ""
		}
		out[i] = st
	}
	if err := writeState(n.Dir, out); err != nil && first == nil {
		first = err
	}
	return first
}

func scheme(store string) string {
	if store == "gcs" {
		return "gs"
	}
	return store
}
