package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision/node"
	"sortie/provision/node/agent"
)

// fakeSyncProgram is a sync program that records its calls beside itself.
func fakeSyncProgram(t *testing.T) (prog, calls string) {
	t.Helper()
	dir := t.TempDir()
	prog, calls = filepath.Join(dir, "sortie-sync"), filepath.Join(dir, "calls")
	if err := os.WriteFile(prog, []byte("#!/bin/bash\necho \"$1\" >>"+calls+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(node.SyncEnv, prog)
	return prog, calls
}

// A MOUNT bucket on a node with none of its FUSE programs fails Start
// with a PrecheckError naming them, before the node is claimed; with one,
// the task starts, the sync program copied beside the agent, and the
// agent runs it around the task.
func TestStartWithBuckets(t *testing.T) {
	ctx := context.Background()
	_, calls := fakeSyncProgram(t)
	spec := node.StartSpec{Run: "echo ran", Storage: []byte(`{"interval_ms":0,"mounts":[]}`),
		StorageEnv: map[string]string{"AWS_REGION": "us-east-1"}, FUSE: [][]string{{"mount-s3", "mountpoint-s3"}}}

	r := newNode(t)
	err := node.Start(ctx, r, spec)
	var pe *node.PrecheckError
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "mode MOUNT needs mount-s3 or mountpoint-s3 on the node") || !strings.Contains(pe.Msg, "MOUNT_CACHED") {
		t.Fatalf("Start without a FUSE program = %v, want a PrecheckError naming mount-s3 and MOUNT_CACHED", err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir(), "started")); err == nil {
		t.Error("the node was claimed by a start that failed its prechecks")
	}

	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "mountpoint-s3"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	r = newNode(t)
	if err := node.Start(ctx, r, spec); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, r); st.ExitCode != 0 {
		t.Fatalf("task ended %+v", st)
	}
	link, err := os.Readlink(filepath.Join(r.Dir(), agent.FileSync))
	if err != nil || !strings.Contains(link, "/.sortie-agent/") || filepath.Base(link) != "sortie-sync" {
		t.Errorf("sync link %q, %v; want the copy beside the agent", link, err)
	}
	if b, _ := os.ReadFile(calls); string(b) != "down\nup\n" {
		t.Errorf("the sync program ran %q, want the download before the task and the last upload after it", b)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Dir(), agent.FileStorageEnv)); string(b) != "AWS_REGION=us-east-1\n" {
		t.Errorf("storage.env = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(r.Dir(), agent.FileStorageEnv)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("storage.env mode %v, %v; want 0600", fi.Mode(), err)
	}
}
