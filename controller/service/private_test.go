package service

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"sortie/controller/clouds"
	"sortie/controller/home"
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
	if _, err := s.Launch(context.Background(), LaunchRequest{File: task}); err != nil {
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
