package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/schema"
)

// uploadedInputs points every workdir and local file_mounts source of p
// (storage mounts' too) at its upload, as a server launches: inputs maps
// each source as written to its digest, and s.Inputs says where that
// upload is unpacked. A server looks at no path of its own disk for a
// request: a source the request did not upload is a problem naming its
// field, whatever that path is on the server, and an uploaded one is
// looked at through its upload's root. No problem names where the server
// keeps an upload.
func (s *Service) uploadedInputs(p *schema.Pipeline, inputs map[string]contract.Upload) []schema.Problem {
	var probs []schema.Problem
	resolve := func(i int, field, src string, workdir bool) string {
		path := taskPath(p, i, field)
		problem := func(format string, args ...any) string {
			probs = append(probs, schema.Problem{Path: path, Value: strconv.Quote(src), Message: fmt.Sprintf(format, args...)})
			return src
		}
		u, ok := inputs[src]
		if !ok {
			return problem("was not uploaded with the request: a server reads no path of its own disk for a request, so every workdir and local file_mounts source travels as an upload (inputs); `sortie jobs launch` through a server uploads them")
		}
		d := u.SHA256
		if !contract.Digest.MatchString(d) {
			return problem("names no upload (%q): give the SHA-256 of the upload, 64 lower-case hex digits", d)
		}
		dir, err := s.Inputs(d)
		if err != nil {
			return problem("%v", err)
		}
		name := "."
		if u.File != "" {
			if u.File != filepath.Base(u.File) || u.File == "." || u.File == ".." {
				return problem("is uploaded as file %q, which is not a file name: a single file's upload names the file alone, without a directory", u.File)
			}
			name = u.File
		}
		info, err := statInUpload(dir, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return problem("is uploaded as file %q, which upload %s does not hold", u.File, d)
		case err != nil:
			return problem("cannot be read from upload %s: its links lead outside it", d)
		case workdir && !info.IsDir():
			return problem("is uploaded as a single file (%q), not a directory; give the directory the task runs in, and put single files under file_mounts", u.File)
		case !info.IsDir() && !info.Mode().IsRegular():
			return problem("is %s in upload %s; sortie copies regular files and directories only", schema.FileKind(info.Mode()), d)
		}
		return filepath.Join(dir, name)
	}
	for i, t := range p.Tasks {
		if t.Workdir != "" {
			t.Workdir = resolve(i, "workdir", t.Workdir, true)
		}
		for _, dst := range sortedKeys(t.FileMounts) {
			src := t.FileMounts[dst]
			if strings.Contains(src, "://") {
				continue // a bucket: Unresolved refuses it
			}
			t.FileMounts[dst] = resolve(i, "file_mounts."+dst, src, false)
		}
		for _, dst := range sortedKeys(t.StorageMounts) {
			t.StorageMounts[dst] = t.StorageMounts[dst].MapSources(func(field, src string) string {
				return resolve(i, "file_mounts."+dst+"."+field, src, false)
			})
		}
	}
	return probs
}

// storedUploadProblems is inputProblems of a stored job that a server
// retries: each source is looked at through its upload's root, and one
// that is not in an upload of home is not looked at, only named.
func storedUploadProblems(p *schema.Pipeline, h string) []schema.Problem {
	var probs []schema.Problem
	check := func(i int, field, src string) {
		tree, rel, ok := home.InUpload(h, src)
		switch {
		case !ok:
			probs = append(probs, schema.Problem{Path: taskPath(p, i, field),
				Message: "was not uploaded: a server reads no path of its own disk for a request; launch the task again through the server"})
		default:
			if _, err := statInUpload(tree, rel); err != nil {
				probs = append(probs, schema.Problem{Path: taskPath(p, i, field),
					Message: "is no longer in its upload on this server; launch the task again"})
			}
		}
	}
	for i, t := range p.Tasks {
		if t.Workdir != "" {
			check(i, "workdir", t.Workdir)
		}
		for _, dst := range sortedKeys(t.FileMounts) {
			if src := t.FileMounts[dst]; !strings.Contains(src, "://") {
				check(i, "file_mounts."+dst, src)
			}
		}
		for _, dst := range sortedKeys(t.StorageMounts) {
			for _, ls := range t.StorageMounts[dst].LocalSources() {
				check(i, "file_mounts."+dst+"."+ls.Field, ls.Path)
			}
		}
	}
	return probs
}

// statInUpload is os.Stat of name in the upload unpacked at dir, through
// the upload's root: a link that leads outside is an error, not what it
// points at.
func statInUpload(dir, name string) (fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Stat(name)
}

// LocalSources lists the workdirs and local file_mounts sources (storage
// mounts' too) a launch
// request names, each as the task writes it (the key of
// LaunchRequest.Inputs) with the path it names on this machine: what a
// client uploads before it asks a server to launch. A file that does not
// parse is its problems, as a launch gives them.
func LocalSources(req contract.LaunchRequest) (map[string]string, error) {
	data := req.Task
	if data == nil {
		var err error
		if data, err = schema.ReadFile(req.File); err != nil {
			return nil, &contract.UsageError{Err: fmt.Errorf("read task file: %w", err)}
		}
	}
	p, err := parseWithEnvs(data, req.Envs)
	if err != nil {
		return nil, err
	}
	if p, err = applyLaunchOverrides(p, req); err != nil {
		return nil, err
	}
	base := req.Dir
	if base, err = filepath.Abs(base); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range p.Tasks {
		if t.Workdir != "" {
			out[t.Workdir] = localPath(base, t.Workdir)
		}
		for _, src := range t.FileMounts {
			if !strings.Contains(src, "://") {
				out[src] = localPath(base, src)
			}
		}
		for _, sm := range t.StorageMounts {
			for _, ls := range sm.LocalSources() {
				out[ls.Path] = localPath(base, ls.Path)
			}
		}
	}
	return out, nil
}
