package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/provision/node"
)

// fakeSync is a sync program that answers check as a store would: the
// bucket "theirs" cannot be read (another account's), "gone" does not
// exist; it records each call in calls.
func fakeSync(t *testing.T) (calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	prog := filepath.Join(dir, "sortie-sync")
	script := `#!/bin/bash
echo "$*" >>` + calls + `
case "$*" in
*"-bucket theirs"*) echo "HeadBucket: 403 Forbidden" >&2; exit 3 ;;
*"-bucket gone"*) exit 4 ;;
esac
exit 0
`
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(node.SyncEnv, prog)
	return calls
}

// A launch asks each store whether the task's buckets can be read, and
// refuses, naming the field, a bucket that cannot be, a URL whose bucket
// is not there, and a storage source that is missing: before anything is
// stored or provisioned. A storage mount's missing bucket is created
// later, so it may be missing.
func TestLaunchChecksBuckets(t *testing.T) {
	ctx := context.Background()
	calls := fakeSync(t)
	s := testService(t)
	root := project(t, map[string]string{
		"bad.yaml": `file_mounts:
  /theirs: {name: theirs, store: s3, mode: COPY}
  /gone: s3://gone/data
  /ok: {name: mine, store: s3, mode: MOUNT_CACHED}
run: "true"
`,
		"nosrc.yaml": "file_mounts:\n  /ckpt: {name: mine, store: s3, mode: COPY, source: ./init}\nrun: \"true\"\n",
		"good.yaml":  "file_mounts:\n  /ckpt: {name: mine, store: s3, mode: MOUNT_CACHED}\nrun: \"true\"\n",
		"gcs.yaml": `file_mounts:
  /ckpt: {name: mine-gcs, store: gcs, mode: MOUNT_CACHED}
  /theirs: gs://theirs/data
run: "true"
`,
	})
	_, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "bad.yaml"), Dir: root})
	want := []string{
		`file_mounts./gone: "gone" does not exist; give a bucket that does, or a storage mount ({name: ..., store: ...}), which sortie creates`,
		`file_mounts./theirs: "theirs" cannot be read with your credentials (HeadBucket: 403 Forbidden); name a bucket they may read, or use credentials that may read it`,
	}
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(calls)
	if got := string(b); !strings.Contains(got, "check -store s3 -bucket mine -create\n") || !strings.Contains(got, "check -store s3 -bucket gone\n") {
		t.Errorf("the sync program was asked:\n%s", got)
	}
	_, err = s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "nosrc.yaml"), Dir: root})
	if got := problems(t, err); len(got) != 1 || !strings.HasPrefix(got[0], `file_mounts./ckpt.source: "./init" cannot be read: `+root+"/init does not exist") {
		t.Errorf("missing source: %q", got)
	}
	jobs, err := s.Store.Jobs(ctx, store.JobFilter{})
	if err != nil || len(jobs) != 0 {
		t.Fatalf("refused launches stored %d jobs (%v)", len(jobs), err)
	}
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "good.yaml"), Dir: root}); err != nil {
		t.Fatalf("a bucket sortie creates: %v", err)
	}
	// GCS buckets are asked of the same program, with store gcs.
	_, err = s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "gcs.yaml"), Dir: root})
	want = []string{`file_mounts./theirs: "theirs" cannot be read with your credentials (HeadBucket: 403 Forbidden); name a bucket they may read, or use credentials that may read it`}
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("gcs problems (-want +got):\n%s", diff)
	}
	b, _ = os.ReadFile(calls)
	if got := string(b); !strings.Contains(got, "check -store gcs -bucket mine-gcs -create\n") || !strings.Contains(got, "check -store gcs -bucket theirs\n") {
		t.Errorf("the sync program was asked:\n%s", got)
	}
}
