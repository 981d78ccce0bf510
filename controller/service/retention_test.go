package service

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// Once the controller removed a job's logs, `jobs logs` says when and why
// instead of printing nothing; its known failure still refuses the inputs,
// saying the logs are gone, and `jobs failures` says so too.
func TestLogsRemovedAreSaidSo(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"t.yaml": "run: exit 3\n"})
	v, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Store.NewAttempt(ctx, v.ID, 0, func(int) string { return "c" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkLaunched(ctx, a.ID, "local", "local", "local-a", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	three := 3
	if err := s.Store.EndAttempt(ctx, a, store.Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{&three}},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "exit code 3"}, store.Facts{LogPath: "/gone"}); err != nil {
		t.Fatal(err)
	}
	removed := time.Now().Add(-2 * time.Hour)
	if err := s.Store.MarkLogsRemoved(ctx, v.ID, removed, "the job ended more than controller.log_retention (30d) before"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = s.Logs(ctx, contract.LogsRequest{ID: v.ID}, &out)
	if !errors.Is(err, contract.ErrLogsRemoved) {
		t.Fatalf("Logs: %v, want ErrLogsRemoved", err)
	}
	want := "sortie: the logs of job 1 were removed on " + removed.UTC().Format("2006-01-02 15:04:05 UTC") +
		" (2 hours ago): the job ended more than controller.log_retention (30d) before\n"
	if out.String() != want {
		t.Errorf("Logs printed %q\nwant %q", out.String(), want)
	}
	_, err = s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	var kf *contract.KnownFailureError
	if !errors.As(err, &kf) || !strings.Contains(err.Error(), "Its logs were removed 2 hours ago (controller.log_retention); `sortie jobs show 1`") {
		t.Errorf("relaunch: %v", err)
	}
	fs, err := s.Failures(ctx)
	if err != nil || len(fs) != 1 || fs[0].LogsRemovedAt == nil || !fs[0].LogsRemovedAt.Equal(removed) {
		t.Errorf("failures: %+v %v", fs, err)
	}
}
