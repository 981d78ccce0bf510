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
	c.Log = slog.New(slog.NewJSONHandler(&out, nil))
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
