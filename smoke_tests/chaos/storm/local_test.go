package storm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/service"
	"sortie/controller/store"
)

// lines hands each Write to a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) { l <- string(p); return len(p), nil }

// A launch made while the home's disk is full is refused with an error
// diskFullError knows and stores nothing; the same launch once the disk
// has room stores one job: what submitFiles counts on.
func TestSubmitWhileDiskFullIsRefusedThenTakes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	full := &diskFull{}
	if err := full.mount(home); err != nil {
		t.Skip(err)
	}
	t.Cleanup(full.unmount)
	task := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(task, []byte("name: t\nrun: exit 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	never := func() { t.Error("a launch was refused before the disk filled") }
	// One launch first, so the store exists before the disk fills.
	if err := submitFiles(ctx, home, []string{task}, 0, never); err != nil {
		t.Fatal(err)
	}
	// fill fills the disk until the returned free is called, which waits
	// for the filler to be gone.
	fill := func() (free func()) {
		progress := make(lines, 4)
		fctx, stop := context.WithCancel(ctx)
		filled := make(chan error, 1)
		go func() { filled <- full.fill(fctx, time.Minute, progress) }()
		if line := <-progress; !strings.Contains(line, "is full") {
			t.Fatalf("fill said %q first", line)
		}
		return func() {
			stop()
			if err := <-filled; err != nil {
				t.Error(err)
			}
		}
	}

	// A command opening the store while the disk is full is told so; it
	// does not take the store for a new one.
	free := fill()
	_, err := service.Open(ctx, home, clouds.Light())
	free()
	if err == nil || !strings.Contains(err.Error(), "no space left") || strings.Contains(err.Error(), ".sql") {
		t.Fatalf("opening the store on a full disk: %v", err)
	}

	// A launch through a service opened before the disk filled is refused
	// until it has room.
	svc, err := service.Open(ctx, home, clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	free = fill()
	refused := 0
	var once sync.Once
	err = submitFiles(ctx, home, []string{task}, 0, func() {
		refused++
		once.Do(free) // room again once the launch has been refused
	})
	if err != nil {
		t.Fatalf("the launch after the disk had room: %v", err)
	}
	if refused == 0 {
		t.Fatal("no launch was refused while the disk was full")
	}
	jobs, err := svc.Store.Jobs(ctx, store.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs stored, want 2 (one before the disk filled, one after)", len(jobs))
	}
}
