package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// syncNode gives a node buckets: storage.json with interval, a sync
// program that records each op (and whether the exit code was written
// yet, and the env it got) in ops, exiting with code for "down".
func syncNode(t *testing.T, d string, interval time.Duration, downCode int) {
	t.Helper()
	prog := filepath.Join(t.TempDir(), "sortie-sync")
	script := "#!/bin/bash\n" +
		`state=ok; [ -e "$2/record/exit_code" ] && state=late` + "\n" +
		`echo "$1 $state cred=$CRED" >>"$2/ops"` + "\n" +
		`[ "$1" = down ] && exit ` + strconv.Itoa(downCode) + "\n" +
		"exit 0\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(prog, filepath.Join(d, FileSync)); err != nil {
		t.Fatal(err)
	}
	spec := `{"interval_ms":` + strconv.FormatInt(interval.Milliseconds(), 10) + `,"mounts":[]}`
	if err := os.WriteFile(filepath.Join(d, FileStorage), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, FileStorageEnv), []byte("CRED=from-controller\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The buckets are downloaded before setup, what changed is uploaded every
// interval and once more after the task ends, before its exit code is
// written; the sync program's credentials never reach the task.
func TestBucketsSyncAroundTheTask(t *testing.T) {
	d := node(t, "echo setup", `while [ ! -e "$SORTIE_NODE_DIR/go" ]; do sleep 0.02; done; echo "task cred=$CRED"`)
	killGroups(t, d)
	syncNode(t, d, 30*time.Second, 0)
	clock := newClock()
	a := newAgent(t, d)
	a.Now, a.After = clock.Now, clock.After
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	if got := firstWait(t, clock); got != 30*time.Second {
		t.Fatalf("uploads every %s, want 30s", got)
	}
	clock.Advance(30 * time.Second)
	waitFor(t, "the periodic upload", func() bool { b, _ := os.ReadFile(d + "/ops"); return strings.Count(string(b), "up ") == 1 })
	if err := os.WriteFile(d+"/go", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := "down ok cred=from-controller\nup ok cred=from-controller\nup ok cred=from-controller\n"
	if got := read(t, d+"/ops"); got != want {
		t.Errorf("ops = %q, want %q", got, want)
	}
	if got := read(t, d+"/record/exit_code"); got != "run 0 -\n" {
		t.Errorf("exit_code = %q", got)
	}
	if log := read(t, d+"/log"); !strings.Contains(log, "task cred=\n") {
		t.Errorf("log = %q: the task saw the sync program's env", log)
	}
}

// A download that fails ends the task as a setup failure, before setup.
func TestBucketsDownloadFailureFailsSetup(t *testing.T) {
	d := node(t, `echo setup ran >"$SORTIE_NODE_DIR/setup-ran"`, "true")
	syncNode(t, d, 0, 1)
	if err := newAgent(t, d).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := read(t, d+"/record/exit_code"); got != "setup 1 -\n" {
		t.Errorf("exit_code = %q, want setup 1", got)
	}
	if _, err := os.Stat(d + "/setup-ran"); err == nil {
		t.Error("setup ran after a failed download")
	}
	if log := read(t, d+"/log"); !strings.Contains(log, "download of the buckets failed") {
		t.Errorf("log = %q", log)
	}
}

// The status answer carries the sync program's state, one JSON line.
func TestAnswerReportsStorage(t *testing.T) {
	d := node(t, "", "true")
	state := `[{"path":"ckpt","store":"s3","bucket":"b","mode":"MOUNT_CACHED","uploaded_at":"2026-11-30T10:00:00Z","uploaded_bytes":5,"downloaded_bytes":0,"uploaded_total":9}]` + "\n"
	if err := os.WriteFile(filepath.Join(d, FileStorageState), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Answer(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `storage=[{"path":"ckpt","store":"s3","bucket":"b","mode":"MOUNT_CACHED","downloaded_bytes":0,"uploaded_at":"2026-11-30T10:00:00Z","uploaded_bytes":5,"uploaded_total":9}]`
	if !strings.Contains(string(out), want+"\n") {
		t.Errorf("answer = %q, want the line %q", out, want)
	}
}
