package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

func TestShards(t *testing.T) { onEach(t, testShards) }

func testShards(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	var attempts []*Attempt
	for i := 0; i < 7; i++ {
		id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte("{}")}, []NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.NewAttempt(ctx, id, 0, func(n int) string { return "c" }, nil, lifecycle.Starting)
		if err != nil {
			t.Fatal(err)
		}
		attempts = append(attempts, a)
	}
	// Job 3 has ended: no shard lists it.
	if err := s.EndAttempt(ctx, attempts[2], Observed{Outcome: strategy.Cancelled, Reason: "cancelled by user"},
		strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Reason: "cancelled by user"}, Facts{}); err != nil {
		t.Fatal(err)
	}
	jobIDs := func(js []*Job) []int64 {
		var out []int64
		for _, j := range js {
			out = append(out, j.ID)
		}
		return out
	}
	all, err := s.ActiveJobsShard(ctx, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{1, 2, 4, 5, 6, 7}, jobIDs(all)); diff != "" {
		t.Errorf("one shard (-want +got):\n%s", diff)
	}
	seen := map[int64]int{}
	for k := 0; k < 3; k++ {
		js, err := s.ActiveJobsShard(ctx, 3, k)
		if err != nil {
			t.Fatal(err)
		}
		as, err := s.OpenAttemptsShard(ctx, 3, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range js {
			if j.ID%3 != int64(k) {
				t.Errorf("shard %d lists job %d", k, j.ID)
			}
			seen[j.ID]++
		}
		for _, a := range as {
			if a.JobID%3 != int64(k) {
				t.Errorf("shard %d lists an attempt of job %d", k, a.JobID)
			}
		}
	}
	if diff := cmp.Diff(map[int64]int{1: 1, 2: 1, 4: 1, 5: 1, 6: 1, 7: 1}, seen); diff != "" {
		t.Errorf("jobs seen per shard (-want +got):\n%s", diff)
	}
}
