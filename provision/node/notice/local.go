package notice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// RequestFile is the file in a local node's directory that gives the node a
// preemption notice; `sortie local preempt --notice` writes it.
const RequestFile = "notice-request.json"

// Request is RequestFile's content.
type Request struct {
	// Kind is the notice's kind; empty means KindPreempted.
	Kind string `json:"kind,omitempty"`
	// Deadline is when the node is taken away.
	Deadline time.Time `json:"deadline"`
}

// WriteRequest gives the local node in dir a notice: written to a temporary
// file, synced and renamed, so the watcher never reads half of it. dir is
// made when it is not there yet (a node whose task has not started hears
// the notice when it starts).
func WriteRequest(dir string, r Request) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write the notice request in %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".notice-*")
	if err != nil {
		return fmt.Errorf("write the notice request in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write the notice request in %s: %w", dir, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write the notice request in %s: %w", dir, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the notice request in %s: %w", dir, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, RequestFile)); err != nil {
		return fmt.Errorf("write the notice request in %s: %w", dir, err)
	}
	return nil
}

// ReadRequest reads the notice request in dir; ok is false when there is none.
func ReadRequest(dir string) (r Request, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, RequestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Request{}, false, nil
	}
	if err != nil {
		return Request{}, false, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return Request{}, false, fmt.Errorf("read %s: %w", filepath.Join(dir, RequestFile), err)
	}
	return r, true, nil
}

func (c Config) watchLocal(ctx context.Context, report func(Notice) bool) {
	for {
		r, ok, err := ReadRequest(c.NodeDir)
		switch {
		case err != nil:
			c.Log.Warn("reading the local notice request", "dir", c.NodeDir, "err", err)
		case ok:
			kind := r.Kind
			if kind == "" {
				kind = KindPreempted
			}
			if report(Notice{Kind: kind, Source: SourceLocal, At: c.Now(), Deadline: r.Deadline}) {
				return
			}
		}
		if !c.Wait(ctx, c.Interval) {
			return
		}
	}
}
