package service

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/schema"
)

// prepared is a launch request made into a pipeline ready to store.
type prepared struct {
	pipeline *schema.Pipeline
	name     string
	baseDir  string
	secrets  map[string]string
	key      string
	// missing is what the launch lacks though the file and flags are
	// valid: envs and secrets without a value, local inputs not there,
	// features that parse but do not run yet. A launch is refused with
	// them; a dry run lists them. key is "" when there are any.
	missing []schema.Problem
}

// prepare reads, validates and completes a launch request without storing
// anything: the task file, the command line's overrides, required envs,
// secrets and the local inputs. A problem with the file or the flags is
// an error; what the launch lacks besides is in missing, every problem at
// once, each with the path a task file problem would have and a fix.
func (s *Service) prepare(req contract.LaunchRequest) (*prepared, error) {
	data := req.Task
	if data == nil {
		var err error
		if data, err = schema.ReadFile(req.File); err != nil {
			return nil, &contract.UsageError{Err: fmt.Errorf("read task file: %w", err)}
		}
	}
	if err := checkVarNames("--env", req.Envs); err != nil {
		return nil, err
	}
	if err := checkVarNames("--secret", req.Secrets); err != nil {
		return nil, err
	}
	p, err := parseWithEnvs(data, req.Envs)
	if err != nil {
		return nil, err
	}
	if p, err = applyLaunchOverrides(p, req); err != nil {
		return nil, err
	}
	if probs := append(s.keepProblems(p), s.sharedGPUProblems(p)...); len(probs) > 0 {
		return nil, &schema.ValidationError{Problems: probs}
	}
	if req.Warn != nil {
		for _, w := range p.Warnings {
			req.Warn(w)
		}
	}
	remote := s.Inputs != nil
	var uploadProbs []schema.Problem
	if remote {
		// A server reads no user's disk: every local source is an upload.
		uploadProbs = s.uploadedInputs(p, req.Inputs)
	} else if len(req.Inputs) > 0 {
		return nil, &contract.UsageError{Err: errors.New("inputs: uploads are for a server; this process reads the sources from disk")}
	}
	for _, t := range p.Tasks {
		expandHome(t)
		for k, v := range req.Secrets {
			if t.Secrets == nil {
				t.Secrets = map[string]*string{}
			}
			t.Secrets[k] = &v
		}
	}
	base := req.Dir
	if remote {
		// Every source is an absolute path under the uploads now.
		base = s.Home
	}
	if base == "" {
		if base, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
	}
	if base, err = filepath.Abs(base); err != nil {
		return nil, fmt.Errorf("working directory %s: %w", req.Dir, err)
	}
	var probs []schema.Problem
	if err := p.Unresolved(clouds.Schema()); err != nil {
		var ve *schema.ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		probs = append(probs, ve.Problems...)
	}
	probs = append(probs, uploadProbs...)
	secrets, missing := s.secretValues(p, s.secretEnv(req.SecretEnv))
	probs = append(probs, missing...)
	probs = append(probs, s.signingKeyProblems(p)...)
	if !remote {
		// A server looked at each source through its upload already, and
		// at nothing else.
		probs = append(probs, inputProblems(p, base)...)
	}
	key := ""
	if len(probs) == 0 {
		key, err = inputKey(p, base, s.uploadsOf(remote))
		var ve *schema.ValidationError
		switch {
		case errors.As(err, &ve):
			probs = ve.Problems
		case err != nil:
			return nil, err
		}
	}
	name := cmp.Or(req.Name, p.Name, strings.TrimSuffix(filepath.Base(req.File), filepath.Ext(req.File)))
	return &prepared{pipeline: p, name: name, baseDir: base, secrets: secrets, key: key, missing: probs}, nil
}

// keepProblems refuses a keep_on_failure above config.yaml's ceiling,
// controller.max_keep_on_failure: a cluster kept costs what it costs
// running.
func (s *Service) keepProblems(p *schema.Pipeline) []schema.Problem {
	ceiling := s.Config.Controller.MaxKeepOnFailure.D()
	if ceiling <= 0 {
		ceiling = config.DefaultMaxKeepOnFailure
	}
	var probs []schema.Problem
	for i, t := range p.Tasks {
		keep := t.Recovery().KeepOnFailure
		if keep.D() <= ceiling {
			continue
		}
		probs = append(probs, schema.Problem{Path: taskPath(p, i, "resources.job_recovery.keep_on_failure"), Value: strconv.Quote(keep.String()),
			Message: fmt.Sprintf("is above controller.max_keep_on_failure (%s); keep it at most %s, or raise the ceiling in config.yaml",
				schema.Duration(ceiling), schema.Duration(ceiling))})
	}
	return probs
}

// sharedGPUProblems refuses a fraction of one accelerator (A100:0.5) the
// cluster cannot give: config.yaml's kubernetes.shared_gpus names no
// shared resource for it, or the fraction is not a whole number of its
// shares. Only Kubernetes is given a fraction (schema refuses it on every
// other cloud).
func (s *Service) sharedGPUProblems(p *schema.Pipeline) []schema.Problem {
	var probs []schema.Problem
	for i, t := range p.Tasks {
		r := t.Resources
		if r.AcceleratorShare == 0 {
			continue
		}
		for _, name := range sortedKeys(r.Accelerators) {
			if _, _, problem := s.Config.Kubernetes.SharedGPU(name, r.AcceleratorShare); problem != "" {
				probs = append(probs, schema.Problem{Path: taskPath(p, i, "resources.accelerators"),
					Value: strconv.Quote(fmt.Sprintf("%s:%g", name, r.AcceleratorShare)), Message: problem})
			}
		}
	}
	return probs
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkVarNames refuses --env or --secret names no shell could read.
func checkVarNames(flag string, vars map[string]string) error {
	var probs []schema.Problem
	for _, k := range sortedKeys(vars) {
		if !varName.MatchString(k) {
			probs = append(probs, schema.Problem{Path: flag + " " + k,
				Message: "is not a valid variable name; use letters, digits and _, not starting with a digit"})
		}
	}
	if len(probs) > 0 {
		return &schema.ValidationError{Problems: probs}
	}
	return nil
}

// taskPath is where a problem of task i is: "workdir" in a file of one
// task, "tasks[1].workdir" in a pipeline, as the parser names them.
func taskPath(p *schema.Pipeline, i int, field string) string {
	if len(p.Tasks) == 1 {
		return field
	}
	return fmt.Sprintf("tasks[%d].%s", i, field)
}

// secretValues takes each secret without a value from the environment,
// and names every one that has none there either.
func (s *Service) secretValues(p *schema.Pipeline, getenv func(string) string) (map[string]string, []schema.Problem) {
	out := map[string]string{}
	var probs []schema.Problem
	for i, t := range p.Tasks {
		for _, k := range sortedKeys(t.Secrets) {
			v := t.Secrets[k]
			switch {
			case v != nil && strings.ContainsRune(*v, 0), v == nil && strings.ContainsRune(getenv(k), 0):
				probs = append(probs, schema.Problem{Path: taskPath(p, i, "secrets."+k),
					Message: "holds a NUL byte, which no environment variable can carry; remove it"})
			case v != nil:
				out[k] = *v
			case getenv(k) != "":
				out[k] = getenv(k)
			default:
				probs = append(probs, schema.Problem{Path: taskPath(p, i, "secrets."+k),
					Message: fmt.Sprintf("has no value; set %s in your environment or pass --secret %s=VALUE", k, k)})
			}
		}
	}
	return out, probs
}

// secretEnv is where secrets without a value are looked up: the values a
// request carries, and nothing else on a server; this process's
// environment (Getenv) otherwise.
func (s *Service) secretEnv(given map[string]string) func(string) string {
	if given != nil || s.Inputs != nil {
		return func(k string) string { return given[k] }
	}
	return s.Getenv
}

// resolveSecrets is secretValues as one error, for a retry.
func (s *Service) resolveSecrets(p *schema.Pipeline, getenv func(string) string) (map[string]string, error) {
	out, probs := s.secretValues(p, getenv)
	if len(probs) > 0 {
		return nil, &schema.ValidationError{Problems: probs}
	}
	return out, nil
}

// expandHome writes a workdir or file_mounts source under "~" as the
// absolute path it names, as SkyPilot does when it loads a task: the
// controller, which uploads them, reads the stored task.
func expandHome(t *schema.Task) {
	home, err := os.UserHomeDir()
	if err != nil {
		return // left as written: the input check says it cannot be read
	}
	expand := func(p string) string {
		if p == "~" || strings.HasPrefix(p, "~/") {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
		return p
	}
	t.Workdir = expand(t.Workdir)
	for dst, src := range t.FileMounts {
		t.FileMounts[dst] = expand(src)
	}
	for dst, sm := range t.StorageMounts {
		t.StorageMounts[dst] = sm.MapSources(func(_, src string) string { return expand(src) })
	}
}

// localPath is where a workdir or file_mounts source of a task launched
// from base is: "~" is the user's home, a relative path starts at base.
func localPath(base, p string) string {
	if schema.IsBucketURL(p) {
		return p // a bucket, not a path on this machine
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

// signingKeyProblems names each webhook whose secret names no signing key
// in the controller's config.yaml: its events could not be signed.
func (s *Service) signingKeyProblems(p *schema.Pipeline) []schema.Problem {
	var probs []schema.Problem
	for i, t := range p.Tasks {
		if t.Notify == nil {
			continue
		}
		for j, w := range t.Notify.Webhooks {
			if _, ok := s.Config.Notify.Secrets[w.Secret]; w.Secret != "" && !ok {
				probs = append(probs, schema.Problem{Path: taskPath(p, i, fmt.Sprintf("notify.webhooks[%d].secret", j)), Value: strconv.Quote(w.Secret),
					Message: fmt.Sprintf("names no signing key; add notify.secrets.%s to %s (16 characters or more), or remove secret to send unsigned", w.Secret, s.configName())})
			}
		}
	}
	return probs
}

// inputProblems names every workdir and local file_mounts source that is
// not there to upload.
func inputProblems(p *schema.Pipeline, base string) []schema.Problem {
	var probs []schema.Problem
	relHint := func(path string) string {
		if filepath.IsAbs(path) || strings.HasPrefix(path, "~") {
			return ""
		}
		return fmt.Sprintf("; relative paths are taken from the directory sortie runs in (%s), as in SkyPilot: run sortie from the directory %s is relative to, or give an absolute path", base, path)
	}
	for i, t := range p.Tasks {
		if t.Workdir != "" {
			abs := localPath(base, t.Workdir)
			info, err := os.Stat(abs)
			switch {
			case err != nil:
				probs = append(probs, schema.Problem{Path: taskPath(p, i, "workdir"), Value: strconv.Quote(t.Workdir),
					Message: fmt.Sprintf("cannot be read: %s%s", statReason(abs, err), relHint(t.Workdir))})
			case !info.IsDir():
				probs = append(probs, schema.Problem{Path: taskPath(p, i, "workdir"), Value: strconv.Quote(t.Workdir),
					Message: fmt.Sprintf("is not a directory (%s); give the directory the task runs in, and put single files under file_mounts", abs)})
			}
		}
		for _, dst := range sortedKeys(t.FileMounts) {
			src := t.FileMounts[dst]
			path := taskPath(p, i, "file_mounts."+dst)
			if strings.Contains(src, "://") {
				continue // a bucket: Unresolved and bucketProblems check it
			}
			abs := localPath(base, src)
			info, err := os.Stat(abs)
			switch {
			case err != nil:
				probs = append(probs, schema.Problem{Path: path, Value: strconv.Quote(src),
					Message: fmt.Sprintf("source cannot be read: %s%s", statReason(abs, err), relHint(src))})
			case !info.Mode().IsRegular() && !info.IsDir():
				probs = append(probs, schema.Problem{Path: path, Value: strconv.Quote(src),
					Message: fmt.Sprintf("source %s is %s; sortie copies regular files and directories only", abs, schema.FileKind(info.Mode()))})
			}
		}
		probs = append(probs, storageSourceProblems(p, i, t, base, relHint)...)
	}
	return probs
}

func statReason(abs string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return abs + " does not exist"
	case errors.Is(err, fs.ErrPermission):
		return abs + ": permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

// inputKey is the job's input key: the pipeline's spec, workdir and local
// file_mounts. A file under them that cannot be read is a problem of the
// workdir or mount that holds it, each named, with a fix.
// On a server, uploads is its home: a file that fails is named by its
// path in its upload, not where the server keeps it.
func inputKey(p *schema.Pipeline, base, uploads string) (string, error) {
	key, err := schema.PipelineKey(p, base)
	if err == nil {
		return key, nil
	}
	// Find which inputs fail by hashing each alone: slow, but only on the
	// way to an error.
	var probs []schema.Problem
	for i, t := range p.Tasks {
		if t.Workdir != "" {
			only := &schema.Task{Workdir: t.Workdir}
			if _, err := schema.InputKey(only, base); err != nil {
				probs = append(probs, schema.Problem{Path: taskPath(p, i, "workdir"), Value: strconv.Quote(t.Workdir),
					Message: "cannot be read whole: " + readReason(err, uploads) + "; fix its permissions, or list it in .sortieignore to leave it out"})
			}
		}
		for _, dst := range sortedKeys(t.FileMounts) {
			only := &schema.Task{FileMounts: map[string]string{dst: t.FileMounts[dst]}}
			if _, err := schema.InputKey(only, base); err != nil {
				probs = append(probs, schema.Problem{Path: taskPath(p, i, "file_mounts."+dst), Value: strconv.Quote(t.FileMounts[dst]),
					Message: "source cannot be read whole: " + readReason(err, uploads) + "; fix its permissions"})
			}
		}
	}
	if len(probs) == 0 {
		if uploads != "" {
			return "", errors.New("compute input key: the server could not read the request's uploads")
		}
		return "", &contract.UsageError{Err: fmt.Errorf("compute input key: %w", err)}
	}
	return "", &schema.ValidationError{Problems: probs}
}

// readReason is the file and the reason of a failed read, without the
// layers of context the hashing added; a file of one of the uploads of
// server home uploads ("" for none) is named by its path in the upload.
func readReason(err error, uploads string) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if _, rel, ok := home.InUpload(uploads, pe.Path); ok {
			return fmt.Sprintf("its %q: %v", rel, pe.Err)
		}
		if uploads != "" {
			return pe.Err.Error()
		}
		return pe.Path + ": " + pe.Err.Error()
	}
	if uploads != "" {
		return "the server could not read it"
	}
	return err.Error()
}

// uploadsOf is the home whose uploads a server's launch reads, "" for a
// launch that reads the user's own disk.
func (s *Service) uploadsOf(remote bool) string {
	if !remote {
		return ""
	}
	return s.Home
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// configName names config.yaml in a message: by its path for the user's
// own home, as "the server's config.yaml" through a server, whose paths a
// request's answer does not name.
func (s *Service) configName() string {
	if s.Inputs != nil {
		return "the server's config.yaml"
	}
	return home.Config(s.Home)
}
