package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkCancelCheck is the look a step takes at a job to catch a
// cancel that came in since it read the job: the whole job, or its one
// column.
func BenchmarkCancelCheck(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "state.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// A spec of a common size: a task with a few lines of setup and run.
	spec := `{"name":"train","tasks":[{"run":"` + strings.Repeat("python train.py --epochs 10 && ", 40) + `true"}]}`
	id, err := s.CreateJob(ctx, &Job{Name: "train", Spec: []byte(spec)}, []NewTask{{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Job", func(b *testing.B) {
		for range b.N {
			if j, err := s.Job(ctx, id); err != nil || j.CancelRequested {
				b.Fatal(err)
			}
		}
	})
	b.Run("CancelRequested", func(b *testing.B) {
		for range b.N {
			if requested, err := s.CancelRequested(ctx, id); err != nil || requested {
				b.Fatal(err)
			}
		}
	})
}
