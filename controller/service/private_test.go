package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/controller/store"
	"sortie/schema"
)

// The store holds specs, env values and commands: it, its WAL and its
// shared memory are private to the home's owner whatever the umask.
func TestTheStoreIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	t.Setenv("SORTIE_POLL_INTERVAL", "")
	h := filepath.Join(t.TempDir(), "home")
	s, err := Open(context.Background(), h, clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	task := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(task, []byte("run: train\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.StartDaemon = func(context.Context, string) error { return nil }
	s.FindDaemon = nil
	if _, err := s.Launch(context.Background(), contract.LaunchRequest{File: task}); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{h: 0o700, home.State(h): 0o600, home.State(h) + "-wal": 0o600, home.State(h) + "-shm": 0o600}
	for path, m := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if fi.Mode().Perm() != m {
			t.Errorf("%s is %v, want %v", path, fi.Mode().Perm(), m)
		}
	}
	if w, err := s.HomeWarning(); err != nil || w != "" {
		t.Errorf("HomeWarning of a new home: %q, %v", w, err)
	}
}

// A file_mounts source that is no file or directory (/dev/null, a FIFO),
// or a secret value no environment can hold, is refused at launch with the
// field: every start would fail on it.
func TestLaunchRefusesInputsNoNodeCanTake(t *testing.T) {
	s := testService(t)
	dir := t.TempDir()
	task := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(task, []byte("run: x\nfile_mounts:\n  /tmp/x: /dev/null\nsecrets:\n  TOKEN: null\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Getenv = func(k string) string {
		if k == "TOKEN" {
			return "hunter2\x00"
		}
		return ""
	}
	_, err := s.Launch(context.Background(), contract.LaunchRequest{File: task, Dir: dir})
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("launch: %v, want a validation error", err)
	}
	for _, want := range []string{`file_mounts./tmp/x: "/dev/null" source /dev/null is a character device; sortie copies regular files and directories only`,
		"secrets.TOKEN: holds a NUL byte"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("launch: %v\nwant %q in it", err, want)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows the secret: %v", err)
	}
	if jobs, _ := s.Store.Jobs(context.Background(), store.JobFilter{}); len(jobs) != 0 {
		t.Errorf("stored %d jobs", len(jobs))
	}
}

// With default webhooks in config.yaml, opening the home records that
// there are some, so that a cancel made while no controller runs (or after
// one without them) is written to the outbox for them; a config without
// them leaves what the controller recorded as it is.
func TestOpenRecordsDefaultWebhooks(t *testing.T) {
	ctx := context.Background()
	t.Setenv("SORTIE_POLL_INTERVAL", "")
	h := filepath.Join(t.TempDir(), "home")
	if err := home.Make(h); err != nil {
		t.Fatal(err)
	}
	// The last controller had no default webhooks.
	st, err := store.Open(ctx, home.State(h), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetDefaultWebhooks(ctx, false); err != nil {
		t.Fatal(err)
	}
	open := func() *Service {
		t.Helper()
		s, err := Open(ctx, h, clouds.Light())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.StartDaemon = func(context.Context, string) error { return nil }
		s.FindDaemon = nil
		return s
	}
	open()
	if on, err := st.DefaultWebhooks(ctx); err != nil || on {
		t.Fatalf("after opening a home without default webhooks: %v %v, want false as the controller left it", on, err)
	}
	if err := os.WriteFile(home.Config(h), []byte("notify:\n  webhooks:\n  - {url: https://hooks.example.com/all}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := open()
	if on, err := st.DefaultWebhooks(ctx); err != nil || !on {
		t.Fatalf("after opening a home with default webhooks: %v %v, want true", on, err)
	}
	task := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(task, []byte("run: train\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := s.Launch(ctx, contract.LaunchRequest{File: task})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, contract.CancelRequest{IDs: []int64{j.ID}}); err != nil {
		t.Fatal(err)
	}
	evs, err := st.UndispatchedEvents(ctx, 10)
	if err != nil || len(evs) != 1 || evs[0].JobID != j.ID || evs[0].To != "CANCELLING" {
		t.Errorf("outbox after the cancel: %+v %v, want the job's change to CANCELLING", evs, err)
	}
}
