package store

import (
	"context"
	"testing"
	"time"

	"sortie/controller/lifecycle"
)

func TestCountJobsByStatusAndTxObserver(t *testing.T) { onEach(t, testCountJobsByStatusAndTxObserver) }

func testCountJobsByStatusAndTxObserver(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	var txs int
	s.ObserveTx(func(d time.Duration) {
		if d < 0 {
			t.Errorf("a transaction took %s", d)
		}
		txs++
	})
	var ids []int64
	for range 3 {
		id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte("{}"), NumTasks: 1}, []NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := s.RequestCancel(ctx, ids[:1]); err != nil {
		t.Fatal(err)
	}
	got, err := s.CountJobsByStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[lifecycle.Pending] != 2 || got[lifecycle.Cancelling] != 1 {
		t.Errorf("counts %v, want PENDING 2 and CANCELLING 1", got)
	}
	if txs != 4 {
		t.Errorf("observed %d transactions, want 4 (3 creates, 1 cancel)", txs)
	}
	s.ObserveTx(nil)
	if _, err := s.RequestCancel(ctx, ids[1:2]); err != nil {
		t.Fatal(err)
	}
	if txs != 4 {
		t.Errorf("observed a transaction after the observer was removed")
	}
}
