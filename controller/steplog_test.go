package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"sortie/provision"
	"sortie/provision/sim"
)

// syncBuffer is a bytes.Buffer the steps' goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Every line a job's step logs carries the job, its task, the attempt and
// its cloud as fields of their own.
func TestAJobsLogLinesCarryItsFields(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	var out syncBuffer
	c.Log = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	j, a := runningAttempt(t, c, cloud, "run: train\n")
	cloud.clusters[a.Cluster].Nodes[0].State = provision.NodePreempted
	if err := c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	var ended map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q: %v", line, err)
		}
		if m["msg"] == "attempt ended" {
			ended = m
		}
	}
	if ended == nil {
		t.Fatalf("no \"attempt ended\" line in:\n%s", out.String())
	}
	want := map[string]any{"job": float64(j.ID), "task": float64(0), "attempt": float64(1), "cloud": "fake", "outcome": "preempted", "level": "INFO"}
	for k, v := range want {
		if ended[k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, ended[k], v, ended)
		}
	}
}

// A provider logs a launch made for a job's attempt through the step's
// logger: its line carries the job, task, attempt and cloud, each once.
func TestAProvidersLaunchLineCarriesTheAttemptsFields(t *testing.T) {
	c := newTestController(t, &fakeCloud{clusters: map[string]*provision.Cluster{}})
	var out syncBuffer
	c.Log = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c.Providers = oneCloud{sim.New(sim.Config{Log: c.Log.With("cloud", sim.CloudName), Now: c.Now})}
	ids := simJobs(t, c, 1)
	tickAndWait(t, c)
	var launched string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q: %v", line, err)
		}
		if m["msg"] == "launched cluster" {
			launched = line
			want := map[string]any{"job": float64(ids[0]), "task": float64(0), "attempt": float64(1), "cloud": sim.CloudName}
			for k, v := range want {
				if m[k] != v {
					t.Errorf("%s = %v, want %v (line %s)", k, m[k], v, line)
				}
			}
		}
	}
	if launched == "" {
		t.Fatalf("no \"launched cluster\" line in:\n%s", out.String())
	}
	for _, k := range []string{"job", "task", "attempt", "cloud"} {
		if n := strings.Count(launched, `"`+k+`":`); n != 1 {
			t.Errorf("%s appears %d times in %s", k, n, launched)
		}
	}
}
