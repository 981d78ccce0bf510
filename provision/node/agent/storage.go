package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Files of a node whose task has buckets (see package sortie/provision/bucket).
const (
	// FileSync is a link to the sync program, sortie-sync.
	FileSync = "sync"
	// FileStorage is the node's buckets: their paths, stores, modes and
	// the upload interval, as JSON.
	FileStorage = "storage.json"
	// FileStorageEnv holds KEY=VALUE lines given to the sync program only
	// (on local, the controller's credentials), never to the task.
	FileStorageEnv = "storage.env"
	// FileStorageState is what the syncs did, per mount, as JSON.
	FileStorageState = "storage-state"
)

// MountSync is what the syncs of one mount did, as the sync program
// writes it in FileStorageState and the status answer reports it.
type MountSync struct {
	Path   string `json:"path"`
	Store  string `json:"store"`
	Bucket string `json:"bucket"`
	Mode   string `json:"mode"`
	// DownloadedAt and DownloadedBytes: the download before setup.
	DownloadedAt    *time.Time `json:"downloaded_at,omitempty"`
	DownloadedBytes int64      `json:"downloaded_bytes"`
	// UploadedAt is when the last upload finished; UploadedBytes what it
	// moved; UploadedTotal what every upload of the attempt moved.
	UploadedAt    *time.Time `json:"uploaded_at,omitempty"`
	UploadedBytes int64      `json:"uploaded_bytes"`
	UploadedTotal int64      `json:"uploaded_total"`
	// Error is the last sync's error, "" when it went well.
	Error string `json:"error,omitempty"`
}

// maxStorageState bounds what Answer reads of the state file.
const maxStorageState = 64 << 10

// buckets says whether the task has buckets to sync, and how often what
// changed is uploaded (0: only when the task ends).
func (a *Agent) buckets() (bool, time.Duration) {
	if !exists(filepath.Join(a.Dir, FileSync)) {
		return false, 0
	}
	b, err := os.ReadFile(filepath.Join(a.Dir, FileStorage))
	if err != nil {
		return false, 0
	}
	var spec struct {
		IntervalMs int64 `json:"interval_ms"`
	}
	if json.Unmarshal(b, &spec) != nil {
		return false, 0
	}
	return true, time.Duration(spec.IntervalMs) * time.Millisecond
}

// sync runs the sync program's op ("down" or "up") on the node, one at a
// time; its output goes to the log.
func (a *Agent) sync(ctx context.Context, op string) error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	logf, err := os.OpenFile(filepath.Join(a.Dir, FileLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(a.Dir, FileSync), op, a.Dir)
	cmd.Dir = a.Dir
	cmd.Env = append(a.Env[:len(a.Env):len(a.Env)], storageEnv(a.Dir)...)
	for _, kv := range a.Env {
		if home, ok := strings.CutPrefix(kv, "HOME="); ok {
			cmd.Env = append(cmd.Env, HomeEnv+"="+home)
		}
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	pid, wait, err := a.start(cmd)
	if err != nil {
		return err
	}
	done := make(chan int, 1)
	go func() { done <- wait() }()
	var code int
	select {
	case code = <-done:
	case <-ctx.Done():
		// SIGINT first when the deadline comes, so the program can save
		// what it moved; SIGKILL 2s later.
		a.signal(cmd, pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			a.signal(cmd, pid, syscall.SIGKILL)
			<-done
		}
		return ctx.Err()
	}
	if code != 0 {
		return fmt.Errorf("%s %s: exit status %d", FileSync, op, code)
	}
	return nil
}

// storageEnv reads FileStorageEnv's KEY=VALUE lines.
func storageEnv(dir string) []string {
	f, err := os.Open(filepath.Join(dir, FileStorageEnv))
	if err != nil {
		return nil
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, _, ok := strings.Cut(sc.Text(), "="); ok && k != "" {
			env = append(env, sc.Text())
		}
	}
	return env
}

// syncEvery uploads what changed every interval until stop is closed.
func (a *Agent) syncEvery(ctx context.Context, interval time.Duration, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-a.After(interval):
		}
		select {
		case <-stop:
			return
		default:
		}
		if err := a.sync(ctx, "up"); err != nil {
			a.logLine(fmt.Sprintf("sortie: upload of the buckets: %v", err))
		}
	}
}

// finalSync uploads what changed once the task has ended, before its exit
// code is written (the controller ends the attempt on it): by a notice's
// deadline when there is one.
func (a *Agent) finalSync(ctx context.Context) {
	a.mu.Lock()
	deadline := a.deadline
	a.mu.Unlock()
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if err := a.sync(ctx, "up"); err != nil {
		a.logLine(fmt.Sprintf("sortie: last upload of the buckets: %v", err))
	}
}
