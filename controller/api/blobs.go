package api

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"sortie/controller/api/web"
	"sortie/controller/contract"
	"sortie/controller/service"
)

// Uploads keeps uploaded workdirs and file mounts: each a tar archive
// named by its SHA-256 under Dir/blobs, unpacked once under Dir/trees
// when a launch names it. The server checks every
// archive's hash, and unpacks through the tree's os.Root only regular
// files, directories and symlinks whose every chain of links stays
// inside, up to Max bytes of files.
type Uploads struct {
	Dir string
	// Max bounds the sum of an upload's regular files' sizes as they are
	// written (--max-upload); zero is DefaultMaxUpload.
	Max int64
	// Log is told a failure of the server's own disk, which a request's
	// answer does not detail; nil logs nothing.
	Log *slog.Logger
	mu  sync.Mutex
}

func (u *Uploads) blob(d string) string { return filepath.Join(u.Dir, "blobs", d) }
func (u *Uploads) tree(d string) string { return filepath.Join(u.Dir, "trees", d) }

// fault is a failure of the server's own disk: logged with its paths,
// answered without them.
func (u *Uploads) fault(d, doing string, err error) error {
	if u.Log != nil {
		u.Log.Error("uploads", "sha256", d, "doing", doing, "err", err)
	}
	return fmt.Errorf("upload %s: the server could not %s it; the server's log says why", d, doing)
}

func checkDigest(d string) error {
	if !contract.Digest.MatchString(d) {
		return &contract.UsageError{Err: fmt.Errorf("blob %q: name a blob by its SHA-256, 64 lower-case hex digits", d)}
	}
	return nil
}

func (s *Server) hasBlob(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	d := r.PathValue("sha256")
	if err := checkDigest(d); err != nil {
		return err
	}
	info, err := os.Stat(s.o.Uploads.blob(d))
	if err != nil {
		w.WriteHeader(http.StatusNotFound)
		return nil
	}
	w.Header().Set("Content-Length", fmt.Sprint(info.Size()))
	w.WriteHeader(http.StatusOK)
	return nil
}

// putBlob stores an upload whose bytes hash to its name; one the server
// has is answered at once.
func (s *Server) putBlob(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	d := r.PathValue("sha256")
	if err := checkDigest(d); err != nil {
		return err
	}
	if info, err := os.Stat(s.o.Uploads.blob(d)); err == nil {
		return web.WriteJSON(w, http.StatusOK, contract.BlobResult{SHA256: d, Size: info.Size()})
	}
	if r.ContentLength > s.o.MaxUpload {
		return tooLarge(s.o.MaxUpload)
	}
	if err := os.MkdirAll(filepath.Join(s.o.Uploads.Dir, "blobs"), 0o700); err != nil {
		return s.o.Uploads.fault(d, "store", err)
	}
	tmp, err := os.CreateTemp(filepath.Join(s.o.Uploads.Dir, "blobs"), ".upload-*")
	if err != nil {
		return s.o.Uploads.fault(d, "store", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), http.MaxBytesReader(w, r.Body, s.o.MaxUpload))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit)
	}
	if err != nil {
		return &contract.UsageError{Err: fmt.Errorf("blob %s: the upload broke off after %d bytes: %v", d, n, err)}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d {
		return web.Errorf(http.StatusBadRequest, contract.CodeDigest, "blob %s: the %d bytes sent hash to %s; send the bytes whose SHA-256 names the blob", d, n, got)
	}
	if err := tmp.Close(); err != nil {
		return s.o.Uploads.fault(d, "store", err)
	}
	if err := os.Rename(tmp.Name(), s.o.Uploads.blob(d)); err != nil {
		return s.o.Uploads.fault(d, "store", err)
	}
	return web.WriteJSON(w, http.StatusCreated, contract.BlobResult{SHA256: d, Size: n, Stored: true})
}

func tooLarge(limit int64) error {
	return &web.Error{Status: http.StatusRequestEntityTooLarge, Code: contract.CodeTooLarge, Limit: limit,
		Msg: fmt.Sprintf("the upload is over the limit of %d bytes (--max-upload); leave what the job does not need out with .sortieignore", limit)}
}

// Path is where upload d is unpacked, unpacking it the first time: the
// service's Inputs. Its files are read through os.OpenRoot(Path), never
// by their paths.
func (u *Uploads) Path(d string) (string, error) {
	if err := checkDigest(d); err != nil {
		return "", err
	}
	dir := u.tree(d)
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	f, err := os.Open(u.blob(d))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("names upload %s, which this server does not have: PUT /v1/blobs/%s first", d, d)
	}
	if err != nil {
		return "", u.fault(d, "read", err)
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", u.fault(d, "unpack", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".unpack-*")
	if err != nil {
		return "", u.fault(d, "unpack", err)
	}
	max := u.Max
	if max <= 0 {
		max = DefaultMaxUpload
	}
	if err := Untar(f, tmp, max); err != nil {
		os.RemoveAll(tmp)
		var ue *UnpackError
		if errors.As(err, &ue) {
			return "", fmt.Errorf("upload %s: %w", d, err)
		}
		return "", u.fault(d, "unpack", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", u.fault(d, "unpack", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return "", u.fault(d, "unpack", err)
	}
	return dir, nil
}

// UnpackError is why an archive is refused: a fault of the archive,
// which names the entry and never a path of the server's.
type UnpackError struct{ Msg string }

func (e *UnpackError) Error() string { return e.Msg }

func refuse(format string, args ...any) error {
	return &UnpackError{Msg: fmt.Sprintf(format, args...)}
}

// Untar unpacks a tar archive into the directory dir, every file made
// through dir's os.Root so that nothing lands outside it: regular
// files, directories, and symlinks to a relative target. An entry that
// would land outside, or under a symlink of the archive; a symlink whose
// target, followed through the archive's other links, leads outside; a
// sparse entry; another kind of entry; or regular files adding up to more
// than max bytes, counted as they are written, refuse the archive with an
// *UnpackError. Any other error is of the server's disk.
func Untar(r io.Reader, dir string, max int64) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	var total int64
	var links []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return refuse("not a tar archive: %v", err)
		}
		name := path.Clean(h.Name)
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return refuse("entry %q is outside the archive's root", h.Name)
		}
		if sparse(h) {
			return refuse("entry %q is a sparse file, which an upload may not hold; upload it as a plain file", h.Name)
		}
		if err := throughSymlink(root, name); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return entryError(h.Name, err)
			}
		case tar.TypeReg:
			if h.Size > max-total {
				return overMax(max, h.Name)
			}
			if err := mkParent(root, name); err != nil {
				return entryError(h.Name, err)
			}
			mode := os.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
			if err != nil {
				return entryError(h.Name, err)
			}
			// The reader's data is not trusted to be the header's size:
			// what is written is counted.
			n, err := io.Copy(f, io.LimitReader(tr, max-total+1))
			total += n
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if total > max {
				return overMax(max, h.Name)
			}
			if err != nil {
				return entryError(h.Name, err)
			}
		case tar.TypeSymlink:
			target := h.Linkname
			inside := path.Clean(path.Join(path.Dir(name), target))
			if target == "" || path.IsAbs(target) || inside == ".." || strings.HasPrefix(inside, "../") {
				return refuse("symlink %q points outside the archive (%q)", h.Name, target)
			}
			if err := mkParent(root, name); err != nil {
				return entryError(h.Name, err)
			}
			if err := root.Symlink(target, name); err != nil {
				return entryError(h.Name, err)
			}
			links = append(links, name)
		default:
			return refuse("entry %q is neither a file, a directory nor a symlink", h.Name)
		}
	}
	// A link's target can stay inside by its text and still leave through
	// another link ("c -> ../.." deep in the tree, "f -> a/b/c/../../.."):
	// each is followed now, through the root, as the kernel would follow it.
	for _, l := range links {
		_, err := root.Stat(l)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return refuse("symlink %q leads outside the archive through its other links, or around a loop of them", l)
		}
	}
	return nil
}

// sparse reports whether h is a sparse file, in any of tar's forms: the
// GNU type, or PAX records of GNU's sparse formats. A reader fills the
// holes with zeros, so a few bytes of archive can claim any size.
func sparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

func overMax(max int64, name string) error {
	return refuse("the archive unpacks to more than %d bytes (--max-upload) at entry %q; leave what the job does not need out with .sortieignore", max, name)
}

// mkParent makes the directories name is in, through root.
func mkParent(root *os.Root, name string) error {
	if dir := path.Dir(name); dir != "." {
		return root.MkdirAll(dir, 0o755)
	}
	return nil
}

// entryError is a failure to make an entry: an entry the archive holds
// twice, or one its own links redirect, is the archive's fault; the
// os.Root's errors name the entry, relative to the root.
func entryError(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return refuse("entry %q: %v", name, pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return refuse("entry %q: %v", name, le.Err)
	}
	return err
}

// throughSymlink refuses an entry whose parent directories include a
// symlink unpacked earlier: writing through it would write elsewhere.
func throughSymlink(root *os.Root, name string) error {
	parts := strings.Split(name, "/")
	for i := range parts[:len(parts)-1] {
		dir := strings.Join(parts[:i+1], "/")
		info, err := root.Lstat(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return entryError(name, err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return refuse("entry %q is under a symlink of the archive", name)
		}
	}
	return nil
}
