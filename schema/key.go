package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// InputKey is the hex SHA-256 that identifies what a task would run: its
// spec after defaults, and the content of its workdir and local file_mounts
// sources. Two launches with the same key run the same inputs, which is what
// lets a known failure be refused. baseDir is the task file's directory;
// relative local paths are taken from there. t is a task as Parse,
// ApplySet or Unmarshal return it: the defaults that depend on the clouds
// (the cloud of a region, the region of a zone) are in it already.
//
// The spec is hashed as canonical JSON (encoding/json sorts map keys, so key
// order, YAML formatting and comments do not count). Left out: secret values
// (names stay), notify, the task's name (renaming a job does not change what it
// runs) and infra, which is already folded into cloud/region/zone.
//
// Directories are walked in a fixed order, hashing each file's relative
// path, executable bits and content; a symlink counts by its target. .git
// and what the root's .sortieignore (else .gitignore) ignores are skipped.
// Bucket URLs (s3://, gs://...) and storage mounts count by their spec
// (names, modes), never by what the bucket holds; a storage mount's local
// source counts by its content.
func InputKey(t *Task, baseDir string) (string, error) {
	spec, err := canonicalSpec(t)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "sortie input key v1\nspec %d\n", len(spec))
	h.Write(spec)
	if t.Workdir != "" {
		fmt.Fprintf(h, "\nworkdir\n")
		if err := hashSource(h, localPath(baseDir, t.Workdir)); err != nil {
			return "", fmt.Errorf("hash workdir %s: %w", t.Workdir, err)
		}
	}
	for _, dst := range sortedKeys(t.FileMounts) {
		src := t.FileMounts[dst]
		if isURL(src) {
			continue
		}
		fmt.Fprintf(h, "\nmount %s\n", strconv.Quote(dst))
		if err := hashSource(h, localPath(baseDir, src)); err != nil {
			return "", fmt.Errorf("hash file_mounts %s source %s: %w", dst, src, err)
		}
	}
	// A storage mount's local source is uploaded at launch: its content
	// counts, as a file mount's does; the bucket's own changing content
	// never does.
	for _, dst := range sortedKeys(t.StorageMounts) {
		for i, src := range t.StorageMounts[dst].LocalSources() {
			if i == 0 {
				fmt.Fprintf(h, "\nstorage source %s\n", strconv.Quote(dst))
			} else {
				fmt.Fprintf(h, "\nstorage source %s %d\n", strconv.Quote(dst), i)
			}
			if err := hashSource(h, localPath(baseDir, src.Path)); err != nil {
				return "", fmt.Errorf("hash file_mounts %s source %s: %w", dst, src.Path, err)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// PipelineKey combines the tasks' input keys in order. A pipeline of one
// task has that task's key, so either can be looked up.
func PipelineKey(p *Pipeline, baseDir string) (string, error) {
	keys := make([]string, len(p.Tasks))
	for i, t := range p.Tasks {
		k, err := InputKey(t, baseDir)
		if err != nil {
			return "", fmt.Errorf("task %d: %w", i, err)
		}
		keys[i] = k
	}
	if len(keys) == 1 {
		return keys[0], nil
	}
	h := sha256.New()
	io.WriteString(h, "sortie pipeline key v1\n")
	for _, k := range keys {
		io.WriteString(h, k+"\n")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func canonicalSpec(t *Task) ([]byte, error) {
	c := t.Clone()
	// The clouds' defaults are filled (see InputKey); the rest name no cloud.
	c.ApplyDefaults(nil)
	c.Name = ""
	c.Notify = nil   // where events go changes nothing the task runs
	c.Priority = nil // nor does when it starts
	for k := range c.Secrets {
		c.Secrets[k] = nil
	}
	clearInfra := func(r *Resources) { r.Infra = "" }
	clearInfra(&c.Resources)
	for i := range c.Resources.AnyOf {
		clearInfra(&c.Resources.AnyOf[i])
	}
	for i := range c.Resources.Ordered {
		clearInfra(&c.Resources.Ordered[i])
	}
	// "./data" and "data/" name the same directory.
	if c.Workdir != "" {
		c.Workdir = filepath.Clean(c.Workdir)
	}
	for dst, src := range c.FileMounts {
		if !isURL(src) {
			c.FileMounts[dst] = filepath.Clean(src)
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode task spec: %w", err)
	}
	return b, nil
}

func isURL(src string) bool { return strings.Contains(src, "://") }

// IsBucketURL reports whether a file_mounts source is a URL (s3://BUCKET,
// gs://BUCKET, ...) rather than a local path: SkyPilot's string form of a
// bucket source, copied to the destination as a storage mount with
// source: URL and mode: COPY is.
func IsBucketURL(src string) bool { return isURL(src) }

// localPath resolves a path from a task file: "~" is the user's home and
// relative paths start at baseDir.
func localPath(baseDir, p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(baseDir, p)
}

// entry is one file of a walked source, in walk order.
type entry struct {
	rel    string
	abs    string
	mode   fs.FileMode
	link   string // a symlink's target
	digest [sha256.Size]byte
}

// hashSource writes one line per file under root (or for root itself when
// it is a file) into h.
func hashSource(h hash.Hash, root string) error {
	info, err := os.Stat(root)
	if err != nil {
		return err
	}
	var entries []*entry
	if info.IsDir() {
		if entries, err = walk(root); err != nil {
			return err
		}
	} else {
		entries = []*entry{{rel: ".", abs: root, mode: info.Mode()}}
	}
	if err := digestAll(entries); err != nil {
		return err
	}
	fmt.Fprintf(h, "files %d\n", len(entries))
	for _, e := range entries {
		// Only the executable bits of a mode: umask differences between
		// checkouts must not make the same inputs look new.
		mode := e.mode&fs.ModeType | e.mode&0o111
		if e.mode&fs.ModeSymlink != 0 {
			fmt.Fprintf(h, "%s %o link %s\n", strconv.Quote(e.rel), uint32(mode), strconv.Quote(e.link))
			continue
		}
		fmt.Fprintf(h, "%s %o %x\n", strconv.Quote(e.rel), uint32(mode), e.digest)
	}
	return nil
}

// walkLimits bound what computing an input key may cost: a workdir of
// millions of files, or an ignore file of many patterns matched against
// each, would hold up the launch for minutes.
type walkLimits struct{ entries, matchSteps int }

// keyWalkLimits are the limits of walk.
func keyWalkLimits() walkLimits { return walkLimits{entries: 500_000, matchSteps: 100_000_000} }

// walk lists the regular files and symlinks under root in lexical order,
// skipping .git and ignored paths, within keyWalkLimits. Sockets, devices
// and pipes are skipped: they are not inputs, and reading a pipe would
// block.
func walk(root string) ([]*entry, error) { return walkWithin(root, keyWalkLimits()) }

// walkWithin is walk within limits.
func walkWithin(root string, limits walkLimits) ([]*entry, error) {
	ign, err := loadIgnore(root)
	if err != nil {
		return nil, fmt.Errorf("read ignore file: %w", err)
	}
	var entries []*entry
	visited := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if visited++; visited > limits.entries {
			return fmt.Errorf("%s holds more than %d files and directories; list what the job does not need in %s",
				root, limits.entries, filepath.Join(root, ".sortieignore"))
		}
		if ign.steps > limits.matchSteps {
			return fmt.Errorf("matching the paths under %s against its ignore file takes more than %d comparisons; use fewer or simpler patterns",
				root, limits.matchSteps)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == ".git" || ign.ignored(rel, true) {
				return filepath.SkipDir
			}
			return nil
		}
		if ign.ignored(rel, false) {
			return nil
		}
		e := &entry{rel: rel, abs: p, mode: d.Type()}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			e.mode = info.Mode()
		default:
			return nil
		}
		entries = append(entries, e)
		return nil
	})
	return entries, err
}

// digestAll hashes the regular files among entries on a bounded pool of
// workers, streaming each file so a large one never sits in memory.
func digestAll(entries []*entry) error {
	work := make(chan *entry)
	workers := min(max(4, 2*runtime.GOMAXPROCS(0)), 16, len(entries))
	var (
		wg       sync.WaitGroup
		failed   atomic.Bool
		firstErr error
		errOnce  sync.Once
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for e := range work {
				if failed.Load() {
					continue
				}
				if err := digestFile(e, buf); err != nil {
					errOnce.Do(func() { firstErr = err })
					failed.Store(true)
				}
			}
		}()
	}
	for _, e := range entries {
		if e.mode.IsRegular() {
			work <- e
		}
	}
	close(work)
	wg.Wait()
	return firstErr
}

func digestFile(e *entry, buf []byte) error {
	f, err := os.Open(e.abs)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	// Hide f's WriterTo so the copy uses buf rather than allocating.
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf); err != nil {
		return fmt.Errorf("read %s: %w", e.rel, err)
	}
	h.Sum(e.digest[:0])
	return nil
}

// InputFile is one file of a workdir or a file mount's directory that the
// input key counts: its path relative to the root (with /), where it is,
// its mode, and a symlink's target.
type InputFile struct {
	Rel, Abs string
	Mode     fs.FileMode
	Link     string
}

// InputFiles lists, in the key's order, the files under root the input
// key counts: .git and what the root's ignore file ignores are left out.
// A client uploading a workdir sends these and no others.
func InputFiles(root string) ([]InputFile, error) {
	entries, err := walk(root)
	if err != nil {
		return nil, err
	}
	out := make([]InputFile, len(entries))
	for i, e := range entries {
		out[i] = InputFile{Rel: e.rel, Abs: e.abs, Mode: e.mode, Link: e.link}
	}
	return out, nil
}
