package service

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"sortie/controller/contract"
	"sortie/schema"
)

// uploadedInputs points every workdir and local file_mounts source of p at
// its upload, as a server launches: inputs maps each source as written to
// its digest, and s.Inputs says where that upload is unpacked. A source
// the request did not upload is a problem naming it.
func (s *Service) uploadedInputs(p *schema.Pipeline, inputs map[string]Upload) ([]schema.Problem, error) {
	var probs []schema.Problem
	resolve := func(i int, field, src string) string {
		path := taskPath(p, i, field)
		u, ok := inputs[src]
		d := u.SHA256
		if !ok {
			probs = append(probs, schema.Problem{Path: path, Value: strconv.Quote(src),
				Message: "was not uploaded with the request: through a server every workdir and local file_mounts source travels as an upload (inputs)"})
			return src
		}
		if !contract.Digest.MatchString(d) {
			probs = append(probs, schema.Problem{Path: path, Value: strconv.Quote(d),
				Message: "names no upload: give the SHA-256 of the upload, 64 lower-case hex digits"})
			return src
		}
		dir, err := s.Inputs(d)
		if err != nil {
			probs = append(probs, schema.Problem{Path: path, Value: d, Message: err.Error()})
			return src
		}
		if u.File == "" {
			return dir
		}
		if u.File != filepath.Base(u.File) || u.File == "." || u.File == ".." {
			probs = append(probs, schema.Problem{Path: path, Value: strconv.Quote(u.File),
				Message: "is not a file name: a single file's upload names the file alone, without a directory"})
			return src
		}
		return filepath.Join(dir, u.File)
	}
	for i, t := range p.Tasks {
		if t.Workdir != "" {
			t.Workdir = resolve(i, "workdir", t.Workdir)
		}
		for _, dst := range sortedKeys(t.FileMounts) {
			src := t.FileMounts[dst]
			if strings.Contains(src, "://") {
				continue // a bucket: Unresolved refuses it
			}
			t.FileMounts[dst] = resolve(i, "file_mounts."+dst, src)
		}
	}
	return probs, nil
}

// LocalSources lists the workdirs and local file_mounts sources a launch
// request names, each as the task writes it (the key of
// LaunchRequest.Inputs) with the path it names on this machine: what a
// client uploads before it asks a server to launch. A file that does not
// parse is its problems, as a launch gives them.
func LocalSources(req LaunchRequest) (map[string]string, error) {
	data := req.Task
	if data == nil {
		var err error
		if data, err = schema.ReadFile(req.File); err != nil {
			return nil, &UsageError{Err: fmt.Errorf("read task file: %w", err)}
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
	}
	return out, nil
}
