package agent

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProgressEnv names, in the environment of the task's phases, the file the
// task writes its progress to: a whole number that grows as the work gets
// done (a training step, a count of records), written over or appended
// one a line. The agent reads the last number written.
const ProgressEnv = "SORTIE_PROGRESS"

// ProgressDir is the node directory's folder that holds the file named by
// ProgressEnv (FileProgressValue): writable by the task, in a sandbox too.
const ProgressDir = "progress"

// FileProgressValue is the task's progress file, in ProgressDir.
const FileProgressValue = "value"

// FileProgress, in RecordDir, is the agent's record of the highest
// progress it read: "<n> [tag]", the tag being ProgressTag under the
// node's key.
const FileProgress = "progress"

// ProgressInterval is how often the agent reads the task's progress file
// while a phase runs; it reads it once more when the task has ended,
// before the exit code is written.
const ProgressInterval = 2 * time.Second

// maxProgressRead is how much of the end of the progress file the agent
// reads: enough for the last line of a file the task appends to.
const maxProgressRead = 64

// ProgressPath is the file named by ProgressEnv for node directory dir.
func ProgressPath(dir string) string {
	return filepath.Join(dir, ProgressDir, FileProgressValue)
}

// ProgressTag is the progress record's tag: HMAC-SHA256, with the node's
// key, of the number, in hex; a record is good on that node and for that
// attempt only, as the exit code's is.
func ProgressTag(key []byte, n int64) string {
	m := hmac.New(sha256.New, key)
	io.WriteString(m, "sortie progress v1\x00"+strconv.FormatInt(n, 10))
	return hex.EncodeToString(m.Sum(nil))
}

// CheckProgressTag says whether tag is the progress record's tag under
// key, in constant time.
func CheckProgressTag(key []byte, n int64, tag string) bool {
	got, err := hex.DecodeString(tag)
	if err != nil {
		return false
	}
	want, _ := hex.DecodeString(ProgressTag(key, n))
	return hmac.Equal(got, want)
}

// ReadProgress reads the last number written to the progress file at
// path: the last line of its end that holds anything, a whole number of 0
// or more. ok is false when there is none (no file, or not a number). The
// task owns the file: a symbolic link is not followed, and a FIFO or
// anything else that is not a regular file is not waited on or read.
func ReadProgress(path string) (n int64, ok bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	off := max(fi.Size()-maxProgressRead, 0)
	b := make([]byte, maxProgressRead)
	k, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, false
	}
	b = bytes.TrimRight(b[:k], " \t\r\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	} else if off > 0 {
		return 0, false // one line longer than the read: not a number
	}
	n, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// recordProgress reads the task's progress file and records the number
// when it is above the highest recorded, durably, with its tag.
func (a *Agent) recordProgress() {
	a.progressMu.Lock()
	defer a.progressMu.Unlock()
	n, ok := ReadProgress(ProgressPath(a.Dir))
	if !ok || (a.progressSeen && n <= a.progress) {
		return
	}
	line := strconv.FormatInt(n, 10)
	if a.Key != nil {
		line += " " + ProgressTag(a.Key, n)
	}
	rec := filepath.Join(a.Dir, RecordDir)
	err := os.Mkdir(rec, 0o755)
	if err == nil || errors.Is(err, fs.ErrExist) {
		err = putDurable(rec, FileProgress, []byte(line+"\n"))
	}
	if err != nil {
		return // read again at the next look
	}
	a.progress, a.progressSeen = n, true
}

// watchProgress records the task's progress every ProgressInterval until
// stop is closed or ctx ends.
func (a *Agent) watchProgress(ctx context.Context, stop <-chan struct{}) {
	after := a.ProgressAfter
	if after == nil {
		after = time.After
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-after(ProgressInterval):
			a.recordProgress()
		}
	}
}
