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
	"sortie/provision"
	"sortie/provision/node"
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
	p, err := schema.Parse([]byte(yaml), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Marshal()
	return b
}

// A controller stopping just after it recorded an attempt's end still
// tears the attempt's cluster down: the stop cancels its context, not the
// teardown that must follow the end.
func TestTeardownOutlivesAStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cloud := &ctxCloud{fakeCloud: &fakeCloud{clusters: map[string]*provision.Cluster{}}}
	c := newTestController(t, cloud.fakeCloud)
	c.Providers = oneCloud{cloud}
	j, a := runningAttempt(t, c, cloud.fakeCloud, "run: train\n")
	// The stop comes as the end is recorded.
	c.Log = slog.New(cancelOn{msg: "attempt ended", cancel: cancel})
	if err := c.judge(ctx, j, a, cloud, cloud.clusters[a.Cluster], []node.Status{{Started: true, Done: true, Phase: node.PhaseRun}}); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() == nil {
		t.Fatal("the stop did not come")
	}
	if len(cloud.terminated) != 1 || cloud.cancelled != 0 {
		t.Errorf("terminated %v, %d with a cancelled context; want %s torn down", cloud.terminated, cloud.cancelled, a.Cluster)
	}
}

// ctxCloud counts the Terminate calls whose context was already done.
type ctxCloud struct {
	*fakeCloud
	cancelled int
}

func (c *ctxCloud) Terminate(ctx context.Context, name string) error {
	if ctx.Err() != nil {
		c.cancelled++
		return ctx.Err()
	}
	return c.fakeCloud.Terminate(ctx, name)
}

// cancelOn is a log handler that calls cancel when msg is logged.
type cancelOn struct {
	msg    string
	cancel func()
}

func (h cancelOn) Enabled(context.Context, slog.Level) bool { return true }
func (h cancelOn) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.cancel()
	}
	return nil
}
func (h cancelOn) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h cancelOn) WithGroup(string) slog.Handler      { return h }
