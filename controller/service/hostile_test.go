package service

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"os"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
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
		_, err := s.Launch(ctx, contract.LaunchRequest{File: file})
		var ue *contract.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("launch %s: %v; want a usage error saying it is not a regular file", file, err)
		}
	}
	if jobs, _ := s.Store.Jobs(ctx, store.JobFilter{}); len(jobs) != 0 {
		t.Errorf("%d jobs stored, want none", len(jobs))
	}
}

// TestRetrySetNameNamesTheNewJob: `jobs retry --set name=X` showed the
// change in its diff while the new job kept the old name.
func TestRetrySetNameNamesTheNewJob(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	task := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(task, []byte("name: old\nrun: train\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	job, err := s.Launch(ctx, contract.LaunchRequest{File: task})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.FinishJob(ctx, job.ID, strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		sets []string
		want string
	}{
		{[]string{"name=new"}, "new"},
		{[]string{"envs.A=1"}, "old"},
	} {
		res, err := s.Retry(ctx, contract.RetryRequest{IDs: []int64{job.ID}, Reason: "rename", Sets: tt.sets})
		if err != nil {
			t.Fatal(err)
		}
		if got := res[0].Retry.Name; got != tt.want {
			t.Errorf("retry with %v is named %q; want %q", tt.sets, got, tt.want)
		}
	}
}
