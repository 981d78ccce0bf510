package client

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"sortie/controller/contract"
	"sortie/schema"
)

// upload packs each workdir and local file mount the request names, and
// puts those the server lacks. A source that cannot be read is left out:
// the server then names it as a problem of the task.
func (c *Client) upload(ctx context.Context, req contract.LaunchRequest) (map[string]contract.Upload, error) {
	out := map[string]contract.Upload{}
	if c.Sources == nil {
		return out, nil
	}
	sources, err := c.Sources(req)
	if err != nil {
		return nil, err
	}
	for src, path := range sources {
		info, err := os.Stat(path)
		if err != nil {
			continue
		}
		ar, up, err := Pack(path, info)
		if err != nil {
			return nil, &contract.UsageError{Err: fmt.Errorf("pack %s (%s) for the server: %w", src, path, err)}
		}
		if err := c.put(ctx, up.SHA256, ar); err != nil {
			return nil, err
		}
		out[src] = up
	}
	return out, nil
}

// put sends blob d unless the server has it.
func (c *Client) put(ctx context.Context, d string, ar []byte) error {
	resp, err := c.do(ctx, http.MethodHead, "/v1/blobs/"+d, nil, "")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	resp, err = c.do(ctx, http.MethodPut, "/v1/blobs/"+d, bytes.NewReader(ar), "application/x-tar")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Pack makes the upload of path: a tar archive of a directory's files
// that the input key counts (what .sortieignore leaves out stays home), or
// of a single file alone. The archive is the same for the same files
// whenever it is made (no times, no owners), so that its hash finds what
// the server has.
func Pack(path string, info os.FileInfo) ([]byte, contract.Upload, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var up contract.Upload
	add := func(rel, abs string, mode os.FileMode, link string) error {
		h := &tar.Header{Name: rel, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch {
		case link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, link
			return tw.WriteHeader(h)
		case mode.IsRegular():
			f, err := os.Open(abs)
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return err
			}
			h.Typeflag, h.Size, h.Mode = tar.TypeReg, st.Size(), 0o644
			if mode&0o111 != 0 {
				h.Mode = 0o755
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			_, err = io.CopyN(tw, f, st.Size())
			return err
		}
		return nil
	}
	if info.IsDir() {
		files, err := schema.InputFiles(path)
		if err != nil {
			return nil, up, err
		}
		for _, f := range files {
			if err := add(f.Rel, f.Abs, f.Mode, f.Link); err != nil {
				return nil, up, err
			}
		}
	} else {
		up.File = filepath.Base(path)
		if err := add(up.File, path, info.Mode(), ""); err != nil {
			return nil, up, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, up, err
	}
	sum := sha256.Sum256(buf.Bytes())
	up.SHA256 = hex.EncodeToString(sum[:])
	return buf.Bytes(), up, nil
}
