package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/strategy"
)

// fakeSync is a sync program that answers `newest` with what the test
// last wrote to newest(), records every call, and does nothing else.
func fakeSync(t *testing.T) (newest func(string), calls func() string) {
	t.Helper()
	dir := t.TempDir()
	prog := filepath.Join(dir, "sortie-sync")
	script := "#!/bin/bash\necho \"$*\" >>" + dir + "/calls\nif [ \"$1\" = newest ]; then cat " + dir + "/newest 2>/dev/null; fi\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(node.SyncEnv, prog)
	return func(s string) {
			if err := os.WriteFile(dir+"/newest", []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}, func() string {
			b, _ := os.ReadFile(dir + "/calls")
			return string(b)
		}
}

// restartOn starts the next attempt of j's task on the cluster of prev, as
// a restart after an error does, and marks it running.
func restartOn(t *testing.T, c *Controller, j *store.Job, prev *store.Attempt) *store.Attempt {
	t.Helper()
	ctx := context.Background()
	a, err := c.Store.NewAttempt(ctx, j.ID, 0, func(n int) string { return provision.ClusterName(j.ID, 0, n) }, prev, lifecycle.Recovering)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.State = lifecycle.AttemptRunning
	return a
}

// A task with a MOUNT_CACHED bucket whose newest object is new at the end
// of an attempt made progress there; the same object at the next ends is
// none, and max_restarts_without_progress ends the job as a crash loop
// naming the checkpoint. Each attempt keeps the checkpoint seen.
func TestCheckpointInAMountCachedBucketIsProgress(t *testing.T) {
	ctx := context.Background()
	newest, calls := fakeSync(t)
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, `resources:
  job_recovery: {max_restarts_on_errors: 10, max_restarts_without_progress: 1}
file_mounts:
  /data: {source: s3://datasets, mode: COPY}
  /ckpt: {source: s3://ckpts/run, mode: MOUNT_CACHED}
run: train
`)
	saved := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	newest(fmt.Sprintf(`{"key": "run/step-100.pt", "modified": %q}`, saved.Format(time.RFC3339)))
	one := 1
	fail := ended{outcome: strategy.UserFailure, codes: []*int{&one}, reason: "node 0 exited 1"}
	for n := 1; n <= 3; n++ {
		if err := c.endAttempt(ctx, j, a, fail); err != nil {
			t.Fatal(err)
		}
		if j, _ = c.Store.Job(ctx, j.ID); j.Status.Terminal() {
			break
		}
		a = restartOn(t, c, j, a)
	}
	const want = "crash loop: 1 restart without progress (last checkpoint s3://ckpts/run/step-100.pt at attempt 1)"
	if j.Status != lifecycle.Failed || j.FailureReason != want {
		t.Fatalf("job %s (%q), want FAILED (%q)", j.Status, j.FailureReason, want)
	}
	as, err := c.Store.Attempts(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 3 {
		t.Fatalf("%d attempts, want 3: one with a new checkpoint, a restart without, and the one that ends it", len(as))
	}
	for _, a := range as {
		if a.Checkpoint == nil || a.Checkpoint.Key != "s3://ckpts/run/step-100.pt" || !a.Checkpoint.Modified.Equal(saved) {
			t.Errorf("attempt %d checkpoint %+v, want s3://ckpts/run/step-100.pt at %s", a.Attempt, a.Checkpoint, saved)
		}
	}
	// Only the MOUNT_CACHED bucket is listed, once per attempt.
	if got := strings.Count(calls(), "newest -store s3 -bucket ckpts -prefix run/\n"); got != 3 || strings.Contains(calls(), "datasets") {
		t.Errorf("the sync program was asked:\n%s\nwant the MOUNT_CACHED bucket listed 3 times, the COPY one never", calls())
	}
}

// A newer checkpoint at each end keeps a failing task going; a bucket that
// cannot be listed is no checkpoint and no error.
func TestNewerCheckpointsKeepATaskGoing(t *testing.T) {
	ctx := context.Background()
	newest, _ := fakeSync(t)
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, `resources:
  job_recovery: {max_restarts_on_errors: 10, max_restarts_without_progress: 0}
file_mounts:
  /ckpt: {source: gs://ckpts, mode: MOUNT_CACHED}
run: train
`)
	one := 1
	fail := ended{outcome: strategy.UserFailure, codes: []*int{&one}, reason: "node 0 exited 1"}
	for n := 1; n <= 3; n++ {
		saved := time.Now().Add(time.Duration(n) * time.Hour).UTC()
		newest(fmt.Sprintf(`{"key": "step-%d", "modified": %q}`, n, saved.Format(time.RFC3339Nano)))
		if err := c.endAttempt(ctx, j, a, fail); err != nil {
			t.Fatal(err)
		}
		if j, _ = c.Store.Job(ctx, j.ID); j.Status.Terminal() {
			t.Fatalf("attempt %d: job %s (%q), want a restart on a newer checkpoint", n, j.Status, j.FailureReason)
		}
		a = restartOn(t, c, j, a)
	}
	newest("not json")
	if err := c.endAttempt(ctx, j, a, fail); err != nil {
		t.Fatal(err)
	}
	if j, _ = c.Store.Job(ctx, j.ID); j.Status != lifecycle.Failed || !strings.HasPrefix(j.FailureReason, "crash loop: 0 restarts without progress (last checkpoint gs://ckpts/step-3 at attempt 3)") {
		t.Fatalf("job %s (%q), want a crash loop when no checkpoint can be read", j.Status, j.FailureReason)
	}
	if as, _ := c.Store.Attempts(ctx, j.ID); len(as) != 4 || as[3].Checkpoint != nil {
		t.Errorf("the last attempt's checkpoint %+v, want none (the listing could not be read)", as[len(as)-1].Checkpoint)
	}
}
