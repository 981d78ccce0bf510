package api

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"sortie/controller/contract"
	"sortie/controller/service"
)

// Uploads keeps uploaded workdirs and file mounts: each a tar archive
// named by its SHA-256 under Dir/blobs, unpacked once under Dir/unpacked
// when a launch names it. The server checks every archive's hash, and
// unpacks only regular files, directories and symlinks that stay inside.
type Uploads struct {
	Dir string
	mu  sync.Mutex
}

func (u *Uploads) blob(d string) string     { return filepath.Join(u.Dir, "blobs", d) }
func (u *Uploads) unpacked(d string) string { return filepath.Join(u.Dir, "unpacked", d) }

func checkDigest(d string) error {
	if !contract.Digest.MatchString(d) {
		return &service.UsageError{Err: fmt.Errorf("blob %q: name a blob by its SHA-256, 64 lower-case hex digits", d)}
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
		return writeJSON(w, http.StatusOK, BlobResult{SHA256: d, Size: info.Size()})
	}
	if r.ContentLength > s.o.MaxUpload {
		return tooLarge(s.o.MaxUpload)
	}
	if err := os.MkdirAll(filepath.Join(s.o.Uploads.Dir, "blobs"), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(s.o.Uploads.Dir, "blobs"), ".upload-*")
	if err != nil {
		return err
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
		return &service.UsageError{Err: fmt.Errorf("blob %s: the upload broke off after %d bytes: %v", d, n, err)}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d {
		return errorf(http.StatusBadRequest, CodeDigest, "blob %s: the %d bytes sent hash to %s; send the bytes whose SHA-256 names the blob", d, n, got)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), s.o.Uploads.blob(d)); err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, BlobResult{SHA256: d, Size: n, Stored: true})
}

func tooLarge(limit int64) error {
	return &httpError{status: http.StatusRequestEntityTooLarge, code: CodeTooLarge, limit: limit,
		msg: fmt.Sprintf("the upload is over the limit of %d bytes (--max-upload); leave what the job does not need out with .sortieignore", limit)}
}

// Path is where upload d is unpacked, unpacking it the first time: the
// service's Inputs.
func (u *Uploads) Path(d string) (string, error) {
	if err := checkDigest(d); err != nil {
		return "", err
	}
	dir := u.unpacked(d)
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
		return "", err
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Join(u.Dir, "unpacked"), 0o700); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Join(u.Dir, "unpacked"), ".unpack-*")
	if err != nil {
		return "", err
	}
	if err := untar(f, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("upload %s: %w", d, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return dir, nil
}

// untar unpacks a tar archive into root: regular files, directories, and
// symlinks to a relative target that stays inside root; an entry that
// would land outside root, or of another kind, refuses the archive.
func untar(r io.Reader, root string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a tar archive: %w", err)
		}
		name := path.Clean(h.Name)
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("entry %q is outside the archive's root", h.Name)
		}
		dst := filepath.Join(root, filepath.FromSlash(name))
		if err := throughSymlink(root, name); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			target := h.Linkname
			inside := path.Clean(path.Join(path.Dir(name), target))
			if path.IsAbs(target) || inside == ".." || strings.HasPrefix(inside, "../") {
				return fmt.Errorf("symlink %q points outside the archive (%q)", h.Name, target)
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q is neither a file, a directory nor a symlink", h.Name)
		}
	}
}

// throughSymlink refuses an entry whose parent directories include a
// symlink unpacked earlier: writing through it could land outside root.
func throughSymlink(root, name string) error {
	dir := root
	parts := strings.Split(name, "/")
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		info, err := os.Lstat(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("entry %q is under a symlink of the archive", name)
		}
	}
	return nil
}
