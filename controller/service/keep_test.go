package service

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/config"
)

// keep_on_failure above config.yaml's ceiling is refused at launch, at a
// dry run and in a retry's --set, naming the field, the value and the
// ceiling; at the ceiling it is taken.
func TestKeepOnFailureAboveTheCeilingIsRefused(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	if got := s.Config.Controller.MaxKeepOnFailure.D(); got != 24*time.Hour {
		t.Fatalf("default ceiling %v, want 24h", got)
	}
	s.Config.Controller.MaxKeepOnFailure = config.Duration(2 * time.Hour)
	root := project(t, map[string]string{
		"over.yaml": "resources: {job_recovery: {keep_on_failure: 3h}}\nrun: 'true'\n",
		"two.yaml":  "name: p\n---\nrun: 'true'\n---\nresources: {job_recovery: {keep_on_failure: 1d}}\nrun: 'true'\n",
		"at.yaml":   "resources: {job_recovery: {keep_on_failure: 2h}}\nrun: 'true'\n",
	})
	_, err := s.Launch(ctx, LaunchRequest{File: filepath.Join(root, "over.yaml"), Dir: root})
	want := `resources.job_recovery.keep_on_failure: "3h" is above controller.max_keep_on_failure (2h); keep it at most 2h, or raise the ceiling in config.yaml`
	if got := problems(t, err); len(got) != 1 || got[0] != want {
		t.Errorf("launch: %q, want %q", got, want)
	}
	if _, err := s.Plan(ctx, LaunchRequest{File: filepath.Join(root, "over.yaml"), Dir: root}); err == nil {
		t.Error("the dry run passed a keep_on_failure above the ceiling")
	}
	_, err = s.Launch(ctx, LaunchRequest{File: filepath.Join(root, "two.yaml"), Dir: root})
	if got := problems(t, err); len(got) != 1 || !strings.HasPrefix(got[0], `tasks[1].resources.job_recovery.keep_on_failure: "24h" is above`) {
		t.Errorf("pipeline: %q", got)
	}
	j, err := s.Launch(ctx, LaunchRequest{File: filepath.Join(root, "at.yaml"), Dir: root})
	if err != nil {
		t.Fatalf("keep_on_failure at the ceiling: %v", err)
	}
	endJob(t, s, j.ID)
	_, err = s.Retry(ctx, RetryRequest{IDs: []int64{j.ID}, Reason: "r", Sets: []string{"resources.job_recovery.keep_on_failure=5h"}})
	if got := problems(t, err); len(got) != 1 || !strings.Contains(got[0], `keep_on_failure: "5h" is above controller.max_keep_on_failure (2h)`) {
		t.Errorf("retry --set: %q", got)
	}
}
