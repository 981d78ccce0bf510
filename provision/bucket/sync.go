package bucket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Entry is what a sync knows of one file: its size and modification time
// when it last matched the bucket, and the object's ETag then.
type Entry struct {
	Size  int64  `json:"size"`
	ModNs int64  `json:"mod_ns"`
	ETag  string `json:"etag"`
}

// Manifest maps a file's path under the mount (slash-separated) to its
// entry. A file whose size and modification time match its entry is the
// object the bucket holds: a sync never reads its bytes again.
type Manifest map[string]Entry

// LoadManifest reads a manifest; a missing file is an empty one.
func LoadManifest(p string) (Manifest, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := Manifest{}
	if err := json.Unmarshal(b, &m); err != nil {
		// A manifest a crash cut short costs one full comparison, no more.
		return Manifest{}, nil
	}
	return m, nil
}

// Save writes the manifest atomically.
func (m Manifest) Save(p string) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// Mount is a directory synced with a bucket prefix.
type Mount struct {
	Store  Store
	Bucket string
	// Prefix is "" or ends in "/".
	Prefix string
	Dir    string
	// Workers is how many files move at once; 0 is 8.
	Workers int
}

// Result is what a sync moved.
type Result struct {
	Files int
	Bytes int64
}

func (m Mount) workers() int {
	if m.Workers > 0 {
		return m.Workers
	}
	return 8
}

// rel is key's path under the mount, "" for what a sync leaves alone
// (directory markers, sortie's own objects, keys that would leave Dir).
func (m Mount) rel(key string) string {
	r, ok := strings.CutPrefix(key, m.Prefix)
	if !ok || r == "" || strings.HasSuffix(r, "/") || strings.HasPrefix(r, MarkerPrefix) {
		return ""
	}
	c := path.Clean(r)
	if c != r || c == "." || strings.HasPrefix(c, "../") || c == ".." || path.IsAbs(c) {
		return ""
	}
	return c
}

func entryOf(fi fs.FileInfo, etag string) Entry {
	return Entry{Size: fi.Size(), ModNs: fi.ModTime().UnixNano(), ETag: etag}
}

// Down brings Dir up to the bucket: each object whose ETag the manifest
// holds for an unchanged local file is skipped, the others downloaded
// (to a temporary file, renamed into place). Files the bucket lacks are
// left alone.
func (m Mount) Down(ctx context.Context, man Manifest) (Result, error) {
	objs, err := m.Store.List(ctx, m.Bucket, m.Prefix)
	if err != nil {
		return Result{}, err
	}
	var todo []Object
	for _, o := range objs {
		r := m.rel(o.Key)
		if r == "" {
			continue
		}
		if e, ok := man[r]; ok && e.ETag == o.ETag {
			if fi, err := os.Stat(filepath.Join(m.Dir, r)); err == nil && fi.Mode().IsRegular() && entryOf(fi, o.ETag) == e {
				continue
			}
		}
		todo = append(todo, o)
	}
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return Result{}, err
	}
	var mu sync.Mutex
	var res Result
	err = m.each(ctx, len(todo), func(i int) error {
		o := todo[i]
		r := m.rel(o.Key)
		dst := filepath.Join(m.Dir, filepath.FromSlash(r))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.CreateTemp(filepath.Dir(dst), ".sortie-sync-*")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		err = m.Store.Get(ctx, m.Bucket, o.Key, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), dst)
		}
		if err != nil {
			return err
		}
		fi, err := os.Stat(dst)
		if err != nil {
			return err
		}
		mu.Lock()
		man[r] = entryOf(fi, o.ETag)
		res.Files++
		res.Bytes += fi.Size()
		mu.Unlock()
		return nil
	})
	return res, err
}

// changed walks Dir and returns the regular files whose size or
// modification time differ from the manifest's, with what was seen.
func (m Mount) changed(man Manifest) ([]string, map[string]fs.FileInfo, error) {
	var names []string
	seen := map[string]fs.FileInfo{}
	err := filepath.WalkDir(m.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == m.Dir {
				return fs.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".sortie-sync-") {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		r, _ := filepath.Rel(m.Dir, p)
		r = filepath.ToSlash(r)
		if e, ok := man[r]; ok && e.Size == fi.Size() && e.ModNs == fi.ModTime().UnixNano() {
			return nil
		}
		names = append(names, r)
		seen[r] = fi
		return nil
	})
	sort.Strings(names)
	return names, seen, err
}

// Up uploads every file of Dir whose size or modification time changed
// since the manifest saw it; unchanged files are only stat'ed. What the
// manifest records is the file as it was before its bytes were read, so a
// file written during the upload goes again next time. Nothing is ever
// deleted from the bucket.
func (m Mount) Up(ctx context.Context, man Manifest) (Result, error) {
	names, seen, err := m.changed(man)
	if err != nil {
		return Result{}, err
	}
	var mu sync.Mutex
	var res Result
	err = m.each(ctx, len(names), func(i int) error {
		r := names[i]
		fi := seen[r]
		f, err := os.Open(filepath.Join(m.Dir, filepath.FromSlash(r)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		etag, err := m.Store.Put(ctx, m.Bucket, m.Prefix+r, f, fi.Size())
		if err != nil {
			return err
		}
		mu.Lock()
		man[r] = entryOf(fi, etag)
		res.Files++
		res.Bytes += fi.Size()
		mu.Unlock()
		return nil
	})
	return res, err
}

// each runs f(0..n-1) on the mount's workers and returns the first error.
func (m Mount) each(ctx context.Context, n int, f func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(m.workers(), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			i = n
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// SourceHash is the hex sha256 of a local source: each regular file's
// path under it, mode and content, in path order (a file is hashed as its
// own name).
func SourceHash(src string) (string, error) {
	h := sha256.New()
	root, only, err := sourceRoot(src)
	if err != nil {
		return "", err
	}
	files, err := sourceFiles(root, only)
	if err != nil {
		return "", err
	}
	for _, r := range files {
		fi, err := os.Stat(filepath.Join(root, r))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%q %o %d\n", r, fi.Mode().Perm()&0o111, fi.Size())
		f, err := os.Open(filepath.Join(root, r))
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func sourceRoot(src string) (root, only string, err error) {
	fi, err := os.Stat(src)
	if err != nil {
		return "", "", err
	}
	if fi.IsDir() {
		return src, "", nil
	}
	return filepath.Dir(src), filepath.Base(src), nil
}

func sourceFiles(root, only string) ([]string, error) {
	if only != "" {
		return []string{only}, nil
	}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			r, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(r))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// SourceMarker is the key that says a source of this hash was uploaded
// whole under prefix.
func SourceMarker(prefix, hash string) string {
	return prefix + MarkerPrefix + "source-" + hash
}

// UploadSource uploads a local source (a directory's files, or one file)
// under the mount's prefix, content-addressed: when the bucket already
// holds the marker of this content, nothing moves (uploaded is false).
// The marker is written last, so an upload cut short is done again.
func (m Mount) UploadSource(ctx context.Context, src string) (uploaded bool, res Result, err error) {
	return m.uploadSource(ctx, src, "")
}

// uploadSource is UploadSource with a directory's files put under
// PREFIX+under ("" or "NAME/"). The marker stays at the mount's prefix,
// where a sync down skips it, and names under too.
func (m Mount) uploadSource(ctx context.Context, src, under string) (uploaded bool, res Result, err error) {
	hash, err := SourceHash(src)
	if err != nil {
		return false, Result{}, fmt.Errorf("read source %s: %w", src, err)
	}
	if under != "" {
		sum := sha256.Sum256([]byte(under + "\n" + hash))
		hash = hex.EncodeToString(sum[:])
	}
	marker := SourceMarker(m.Prefix, hash)
	objs, err := m.Store.List(ctx, m.Bucket, marker)
	if err != nil {
		return false, Result{}, err
	}
	for _, o := range objs {
		if o.Key == marker {
			return false, Result{}, nil
		}
	}
	root, only, err := sourceRoot(src)
	if err != nil {
		return false, Result{}, err
	}
	up := m
	up.Dir = root
	up.Prefix = m.Prefix + under
	if only != "" {
		fi, err := os.Stat(src)
		if err != nil {
			return false, Result{}, err
		}
		f, err := os.Open(src)
		if err != nil {
			return false, Result{}, err
		}
		defer f.Close()
		if _, err := m.Store.Put(ctx, m.Bucket, m.Prefix+only, f, fi.Size()); err != nil {
			return false, Result{}, err
		}
		res = Result{Files: 1, Bytes: fi.Size()}
	} else if res, err = up.Up(ctx, Manifest{}); err != nil {
		return false, res, err
	}
	if _, err := m.Store.Put(ctx, m.Bucket, marker, bytes.NewReader(nil), 0); err != nil {
		return false, res, err
	}
	return true, res, nil
}

// UploadEach uploads each of srcs, local files and directories, under its
// base name below the mount's prefix, as SkyPilot uploads a list of
// sources into one bucket: a file as PREFIX+NAME, a directory's files
// under PREFIX+NAME/. Each is content-addressed as UploadSource is;
// uploaded counts those that moved.
func (m Mount) UploadEach(ctx context.Context, srcs []string) (uploaded int, res Result, err error) {
	for _, src := range srcs {
		fi, err := os.Stat(src)
		if err != nil {
			return uploaded, res, fmt.Errorf("read source %s: %w", src, err)
		}
		under := ""
		if fi.IsDir() {
			under = filepath.Base(filepath.Clean(src)) + "/"
		}
		up, r, err := m.uploadSource(ctx, src, under)
		res.Files += r.Files
		res.Bytes += r.Bytes
		if err != nil {
			return uploaded, res, err
		}
		if up {
			uploaded++
		}
	}
	return uploaded, res, nil
}
