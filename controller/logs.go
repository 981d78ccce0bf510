package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
)

// LogDir is where an attempt's logs are kept on the controller, one file per
// node, so that `jobs logs` works after the cluster is gone.
func LogDir(home string, job int64, task, attempt int) string {
	return filepath.Join(home, "logs", strconv.FormatInt(job, 10), "task-"+strconv.Itoa(task), "attempt-"+strconv.Itoa(attempt))
}

// NodeLogPath is one node's kept log of an attempt.
func NodeLogPath(home string, job int64, task, attempt, rank int) string {
	return filepath.Join(LogDir(home, job, task, attempt), fmt.Sprintf("node-%d.log", rank))
}

// collectLogs copies every reachable node's log of a into the controller's
// log directory before the cluster is torn down, and returns the directory.
// A node it cannot reach keeps whatever was copied before.
func (c *Controller) collectLogs(ctx context.Context, j *store.Job, a *store.Attempt) string {
	dir := LogDir(c.Config.Home, j.ID, a.TaskIdx, a.Attempt)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.Log.Warn("log dir", "dir", dir, "err", err)
		return dir
	}
	if a.Cloud == "" {
		return dir
	}
	prov, err := c.Providers.Provider(ctx, a.Cloud)
	if err != nil {
		return dir
	}
	got, err := prov.Status(ctx, []string{a.Cluster})
	cl := got[a.Cluster]
	if err != nil || cl == nil {
		return dir
	}
	for rank := range cl.Nodes {
		r, err := c.runner(ctx, prov, cl, rank, a)
		if err != nil {
			continue
		}
		err = keepLog(ctx, r, NodeLogPath(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, rank))
		r.Close()
		if err != nil {
			c.Log.Warn("keep node log", "cluster", a.Cluster, "rank", rank, "err", err)
		}
	}
	return dir
}

// keepLog copies a node's log to path chunk by chunk, so a large log never
// sits in memory whole; the file appears complete or not at all.
func keepLog(ctx context.Context, r provision.Runner, path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	var off int64
	for {
		b, err := node.ReadLog(ctx, r, off)
		if err != nil {
			f.Close()
			return err
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		off += int64(len(b))
		// A chunk shorter than the most ReadLog returns is the end: the
		// task has ended, so its log does not grow, and asking the node
		// once more (a process, or an SSH round trip) would only confirm it.
		if len(b) < node.MaxLogChunk {
			break
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Secrets are kept out of the store: the values a job was launched with live
// in a 0600 file of their own until the job ends.
func secretsPath(home string, job int64) string {
	return filepath.Join(home, "secrets", strconv.FormatInt(job, 10)+".json")
}

// WriteSecrets keeps a job's secret values for the daemon.
func WriteSecrets(home string, job int64, values map[string]string) error {
	if len(values) == 0 {
		// A file of this id left by a launch that died before its commit
		// must not lend its values to this job.
		if err := os.Remove(secretsPath(home, job)); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Join(home, "secrets"), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(values)
	if err != nil {
		return err
	}
	return writeFileAtomic(secretsPath(home, job), b, 0o600)
}

func (c *Controller) readSecrets(job int64) (map[string]string, error) {
	b, err := os.ReadFile(secretsPath(c.Config.Home, job))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v map[string]string
	return v, json.Unmarshal(b, &v)
}

func (c *Controller) cleanupSecrets(job int64) {
	if err := os.Remove(secretsPath(c.Config.Home, job)); err != nil && !os.IsNotExist(err) {
		c.Log.Warn("remove secrets", "job", job, "err", err)
	}
}

// removeStaleSecrets removes the kept secrets of jobs that have ended, in
// case a controller died between ending a job and removing them.
func (c *Controller) removeStaleSecrets(ctx context.Context) {
	files, _ := filepath.Glob(filepath.Join(c.Config.Home, "secrets", "*.json"))
	for _, f := range files {
		id, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(f), ".json"), 10, 64)
		if err != nil {
			continue
		}
		if j, err := c.Store.Job(ctx, id); err == nil && store.IsTerminal(j.Status) {
			c.cleanupSecrets(id)
		}
	}
}
