package store

import (
	"context"
	"testing"

	"sortie/controller/lifecycle"
)

func TestRecordProgressKeepsTheHighest(t *testing.T) { onEach(t, testRecordProgressKeepsTheHighest) }

func testRecordProgressKeepsTheHighest(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, err := s.CreateJob(ctx, &Job{Name: "train", Spec: []byte(`{}`)}, []NewTask{{Name: "t0"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if a.Progress != nil {
		t.Fatalf("a new attempt has progress %d", *a.Progress)
	}
	for _, step := range []struct {
		n    int64
		kept bool
	}{{100, true}, {41200, true}, {500, false}, {41200, false}, {1 << 40, true}} {
		kept, err := s.RecordProgress(ctx, a.ID, step.n)
		if err != nil {
			t.Fatal(err)
		}
		if kept != step.kept {
			t.Errorf("RecordProgress(%d) kept = %v, want %v", step.n, kept, step.kept)
		}
	}
	as, err := s.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if as[0].Progress == nil || *as[0].Progress != 1<<40 {
		t.Errorf("progress = %v, want %d", as[0].Progress, int64(1<<40))
	}
}
