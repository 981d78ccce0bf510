package controller

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision/sim"
	"sortie/schema"
)

// A graceful stop closes every provider, so the sim saves its clusters:
// the next controller finds the attempt's cluster running instead of
// gone. The sim saves at most every 5s otherwise, so only the final save
// can have the cluster launched just before the stop.
func TestStopSavesTheSimsClusters(t *testing.T) {
	h := t.TempDir()
	if err := os.WriteFile(filepath.Join(h, "config.yaml"), []byte("sim: {run_time: 1h, save_every: 1h}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, filepath.Join(h, "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := st.CreateJob(ctx, &store.Job{Name: "j", Spec: specOf(t, "resources: {cloud: sim}\nrun: train\n"), NumTasks: 1}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, h, slog.New(slog.NewTextHandler(io.Discard, nil)), clouds.Light())
	}()
	var cluster string
	for deadline := time.Now().Add(20 * time.Second); cluster == ""; {
		if a, err := st.LastAttempt(ctx, id, 0); err == nil && a != nil && a.State == lifecycle.AttemptRunning {
			cluster = a.Cluster
		}
		if time.Now().After(deadline) {
			t.Fatal("the job's attempt did not run within 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	p, err := sim.Open(clouds.SimStatePath(h), sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got, err := p.Status(context.Background(), []string{cluster})
	if err != nil {
		t.Fatal(err)
	}
	if got[cluster] == nil {
		t.Errorf("the next controller does not find cluster %s after a graceful stop", cluster)
	}
}

func specOf(t *testing.T, yaml string) []byte {
	t.Helper()
	p, err := schema.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Marshal()
	return b
}
