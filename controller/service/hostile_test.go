package service

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sortie/controller/store"
)

// TestLaunchReadsOnlyARegularTaskFile: /dev/zero as the task file used to
// grow memory without bound and a FIFO to block forever. Both are usage
// errors now, and nothing is stored.
func TestLaunchReadsOnlyARegularTaskFile(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	fifo := filepath.Join(t.TempDir(), "task.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"/dev/zero", fifo} {
		_, err := s.Launch(ctx, LaunchRequest{File: file})
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("launch %s: %v; want a usage error saying it is not a regular file", file, err)
		}
	}
	if jobs, _ := s.Store.Jobs(ctx, store.JobFilter{}); len(jobs) != 0 {
		t.Errorf("%d jobs stored, want none", len(jobs))
	}
}
