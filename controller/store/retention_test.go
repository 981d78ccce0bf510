package store

import (
	"context"
	"testing"
	"time"
)

// Jobs whose logs are past a time are found by when they ended; once
// their logs are marked removed they are not found again, and their
// known failure says so.
func TestLogsPastRetention(t *testing.T) { onEach(t, testLogsPastRetention) }

func testLogsPastRetention(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b) // each reading of the clock is a second later
	old, _ := s.CreateJob(ctx, &Job{Name: "old", Spec: []byte(`{}`), InputKey: "k-old"}, []NewTask{{Name: "t"}})
	endFailed(t, s, old, "exit code 1")
	cut := s.now()
	newer, _ := s.CreateJob(ctx, &Job{Name: "new", Spec: []byte(`{}`)}, []NewTask{{Name: "t"}})
	endFailed(t, s, newer, "exit code 1")
	if _, err := s.CreateJob(ctx, &Job{Name: "pending", Spec: []byte(`{}`)}, []NewTask{{Name: "t"}}); err != nil {
		t.Fatal(err)
	}

	ids, err := s.JobsWithLogsEndedBefore(ctx, cut, 10)
	if err != nil || len(ids) != 1 || ids[0] != old {
		t.Fatalf("ended before the cut: %v %v; want [%d]", ids, err, old)
	}
	all, _ := s.JobsWithLogsEndedBefore(ctx, cut.Add(time.Hour), 10)
	if len(all) != 2 {
		t.Fatalf("ended before an hour later: %v; want both ended jobs, not the running one", all)
	}
	if at, _, _ := s.LogsRemoved(ctx, old); at != nil {
		t.Fatalf("removed before the sweep: %v", at)
	}
	when := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	if err := s.MarkLogsRemoved(ctx, old, when, "older than 30d"); err != nil {
		t.Fatal(err)
	}
	at, why, err := s.LogsRemoved(ctx, old)
	if err != nil || at == nil || !at.Equal(when) || why != "older than 30d" {
		t.Fatalf("LogsRemoved: %v %q %v", at, why, err)
	}
	if ids, _ := s.JobsWithLogsEndedBefore(ctx, cut.Add(time.Hour), 10); len(ids) != 1 || ids[0] != newer {
		t.Fatalf("after the removal: %v", ids)
	}
	f, err := s.KnownFailure(ctx, "k-old")
	if err != nil || f == nil || f.LogsRemovedAt == nil || !f.LogsRemovedAt.Equal(when) || f.JobID != old {
		t.Fatalf("known failure after its logs were removed: %+v %v", f, err)
	}
}
