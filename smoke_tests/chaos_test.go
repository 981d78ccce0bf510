package smoke_tests

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sortie/smoke_tests/chaos/storm"
)

// A short `make chaos`: the same storms, small, failing when an invariant
// breaks.

func checkStorm(t *testing.T, r *storm.Result, err error, home string) {
	t.Helper()
	if r != nil {
		t.Log(r.Line())
		for _, p := range r.Problems {
			t.Error(p)
		}
	}
	if err != nil {
		t.Error(err)
	}
	if t.Failed() {
		logTail(t, home)
	}
}

func TestChaosSim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	home := filepath.Join(t.TempDir(), "home")
	r, err := storm.RunSim(ctx, storm.Options{Bin: binary(t), Home: home, Jobs: 100, Kills: 5,
		KillMin: 2 * time.Second, KillMax: 4 * time.Second, Doubles: 1, Freeze: true, Seed: uint64(time.Now().UnixNano()),
		Timeout: time.Minute, Progress: progress(t)})
	checkStorm(t, r, err, home)
	if r != nil && (r.Kills != 5 || r.Doubles != 1 || r.Frozen != 1) {
		t.Errorf("kills %d, double starts %d, sigstops %d; want 5, 1, 1", r.Kills, r.Doubles, r.Frozen)
	}
	if r != nil && (r.Statuses["SUCCEEDED"] == 0 || r.Statuses["FAILED"] == 0) {
		t.Errorf("statuses %v: the mix should end some jobs SUCCEEDED and some FAILED", r.Statuses)
	}
}

func TestChaosLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	r, err := storm.RunLocal(ctx, storm.LocalOptions{Options: storm.Options{Bin: binary(t), Home: home, Jobs: 6, Kills: 3,
		KillMin: 2 * time.Second, KillMax: 4 * time.Second, Doubles: 1, Seed: uint64(time.Now().UnixNano()),
		Timeout: time.Minute, Progress: progress(t)},
		Aimed: 2, Preempts: 1, DiskFull: os.Geteuid() == 0, Outside: filepath.Join(root, "tasks.log")})
	checkStorm(t, r, err, home+".kept")
	if r != nil && (r.Kills != 3 || r.Aimed == 0) {
		t.Errorf("kills %d, aimed %d; want 3 and at least one aimed at a pause point", r.Kills, r.Aimed)
	}
}
