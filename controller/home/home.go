// Package home names the files of one SORTIE_HOME: the store, the
// controller's lock, pid and log, kept logs and kept secrets. The CLI, the
// service and the controller all find them here.
//
// It imports nothing else of sortie's: the paths of a home are needed
// everywhere.
package home

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// State is the SQLite store.
func State(home string) string { return filepath.Join(home, "state.db") }

// Config is config.yaml.
func Config(home string) string { return filepath.Join(home, "config.yaml") }

// Lock is the controller's flock: held while a controller runs.
func Lock(home string) string { return filepath.Join(home, "controller.lock") }

// PID holds the running controller's pid.
func PID(home string) string { return filepath.Join(home, "controller.pid") }

// ServerURL holds the address `sortie server` last served on as users
// reach it (its --url, else the address it listens on), for the links
// `server users add` prints.
func ServerURL(home string) string { return filepath.Join(home, "server.url") }

// ControllerLog is where a controller started in the background writes.
func ControllerLog(home string) string { return filepath.Join(home, "controller.log") }

// Keys holds sortie's SSH key (id_ed25519, id_ed25519.pub) and the host
// keys it pinned (known_hosts).
func Keys(home string) string { return filepath.Join(home, "keys") }

// JobLogDir holds every kept log of a job, so that `jobs logs` works after
// the cluster is gone: each node's log of each attempt is one file in it
// (NodeLog), and keeping an attempt's logs makes no directory of its own.
// Log retention removes it whole.
func JobLogDir(home string, job int64) string {
	return filepath.Join(home, "logs", strconv.FormatInt(job, 10))
}

// NodeLog is where one node's log of an attempt is kept:
// logs/<job>/task-T.attempt-A.node-N.log.
func NodeLog(home string, job int64, task, attempt, rank int) string {
	return filepath.Join(JobLogDir(home, job), fmt.Sprintf("task-%d.attempt-%d.node-%d.log", task, attempt, rank))
}

// NodeLogMissing says why one node's log of an attempt could not be kept:
// it holds the reason, and stands where NodeLog is missing.
func NodeLogMissing(home string, job int64, task, attempt, rank int) string {
	return NodeLog(home, job, task, attempt, rank) + ".missing"
}

// OldNodeLog is where homes of earlier versions kept one node's log of an
// attempt, in directories of its task and attempt:
// logs/<job>/task-T/attempt-A/node-N.log. Nothing is kept there any more;
// what was is still read (KeptNodeLog).
func OldNodeLog(home string, job int64, task, attempt, rank int) string {
	return filepath.Join(JobLogDir(home, job), "task-"+strconv.Itoa(task), "attempt-"+strconv.Itoa(attempt), fmt.Sprintf("node-%d.log", rank))
}

// KeptNodeLog is the file node rank's kept log of an attempt is in:
// NodeLog, or OldNodeLog in a home that kept it before NodeLog's layout.
// ok is false when neither is there.
func KeptNodeLog(home string, job int64, task, attempt, rank int) (path string, ok bool) {
	return firstOf(NodeLog(home, job, task, attempt, rank), OldNodeLog(home, job, task, attempt, rank))
}

// KeptNodeLogMissing is the note saying why node rank's log of an attempt
// was not kept (NodeLogMissing, or beside OldNodeLog in an older home); ok
// is false when there is none.
func KeptNodeLogMissing(home string, job int64, task, attempt, rank int) (path string, ok bool) {
	return firstOf(NodeLogMissing(home, job, task, attempt, rank), OldNodeLog(home, job, task, attempt, rank)+".missing")
}

// firstOf is the first of paths that exists.
func firstOf(paths ...string) (string, bool) {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return "", false
}

// SecretsDir holds the kept secrets of jobs that have not ended.
func SecretsDir(home string) string { return filepath.Join(home, "secrets") }

// Secrets is the file of one job's secret values. Secrets are kept out of
// the store: the values a job was launched with live in a 0600 file of
// their own until the job ends.
func Secrets(home string, job int64) string {
	return filepath.Join(SecretsDir(home), strconv.FormatInt(job, 10)+".json")
}

// WriteSecrets keeps a job's secret values for the controller.
func WriteSecrets(home string, job int64, values map[string]string) error {
	if len(values) == 0 {
		// A file of this id left by a launch that died before its commit
		// must not lend its values to this job.
		if err := os.Remove(Secrets(home, job)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove stale secrets of job %d: %w", job, err)
		}
		return nil
	}
	if err := os.MkdirAll(SecretsDir(home), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(values)
	if err != nil {
		return err
	}
	return WriteFileAtomic(Secrets(home, job), b, 0o600)
}

// ReadSecrets returns a job's kept secret values; none kept is nil.
func ReadSecrets(home string, job int64) (map[string]string, error) {
	b, err := os.ReadFile(Secrets(home, job))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read secrets of job %d: %w", job, err)
	}
	var v map[string]string
	if err := json.Unmarshal(b, &v); err != nil {
		// Never the decoder's message: it may quote a piece of a value.
		return nil, fmt.Errorf("%w: the secrets of job %d in %s are not a JSON object of strings", ErrUnreadable, job, Secrets(home, job))
	}
	for k, val := range v {
		if !isVarName(k) || strings.ContainsRune(val, 0) {
			return nil, fmt.Errorf("%w: the secrets of job %d in %s hold a name that is no variable name, or a value with a NUL byte", ErrUnreadable, job, Secrets(home, job))
		}
	}
	return v, nil
}

// ErrUnreadable is a file sortie wrote that does not read back as it wrote
// it: no retry fixes that.
var ErrUnreadable = errors.New("cannot be read back")

// isVarName says whether k is a shell variable name.
func isVarName(k string) bool {
	for i, c := range k {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return k != ""
}

// RemoveSecrets forgets a job's secret values; none kept is fine.
func RemoveSecrets(home string, job int64) error {
	if err := os.Remove(Secrets(home, job)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// WriteFileAtomic writes path so that it appears whole or not at all.
func WriteFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// FromEnv is $SORTIE_HOME made absolute, default ~/.sortie.
func FromEnv(getenv func(string) string) string {
	if h := getenv("SORTIE_HOME"); h != "" {
		if abs, err := filepath.Abs(h); err == nil {
			return abs
		}
		return h
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		dir = "."
	}
	return filepath.Join(dir, ".sortie")
}
