package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// Two processes write one store at once (two controllers, a controller and
// a CLI): each status move still reads what it changes and refuses what
// the lifecycle does not list, so no move is lost or made twice.
func TestConcurrentWritersFromTwoStores(t *testing.T) { onEach(t, testConcurrentWritersFromTwoStores) }

func testConcurrentWritersFromTwoStores(t *testing.T, b backend) {
	ctx := context.Background()
	one, u := openTest(t, b)
	two, err := OpenURL(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()

	const jobs = 30
	type racer struct {
		id      int64
		attempt *Attempt
	}
	var rs []racer
	for i := range jobs {
		id, err := one.CreateJob(ctx, &Job{Name: fmt.Sprintf("j%d", i), Spec: []byte(`{}`)}, []NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := one.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
		if err != nil {
			t.Fatal(err)
		}
		if err := one.MarkLaunched(ctx, a.ID, "sim", "r", "z", []string{"n0"}); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, racer{id, a})
	}

	// For each job at once: store one ends the attempt FAILED, store two
	// ends it CANCELLED and also asks for it to be RUNNING, and store one
	// asks for the cancel. Exactly one ending wins.
	fail := strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "exit 1", Counters: strategy.Counters{RestartsOnErrors: 1}}
	wins := make([][2]bool, jobs)
	var errs []error
	var mu sync.Mutex
	report := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(4)
		go func() {
			defer wg.Done()
			<-start
			err := one.EndAttempt(ctx, r.attempt, Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1)}, Reason: "exit 1"}, fail, Facts{})
			wins[i][0] = err == nil
			if err != nil && !errors.Is(err, ErrAttemptEnded) && !errors.Is(err, ErrTerminal) && !errors.Is(err, ErrNotAMove) {
				report(fmt.Errorf("job %d failing: %w", r.id, err))
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			err := two.EndAttempt(ctx, r.attempt, Observed{Outcome: strategy.Cancelled, Reason: "cancelled"}, cancelled, Facts{})
			wins[i][1] = err == nil
			if err != nil && !errors.Is(err, ErrAttemptEnded) && !errors.Is(err, ErrTerminal) && !errors.Is(err, ErrNotAMove) {
				report(fmt.Errorf("job %d cancelling: %w", r.id, err))
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			err := two.MarkRunning(ctx, r.attempt)
			if err != nil && !errors.Is(err, ErrNotAMove) && !errors.Is(err, ErrAttemptEnded) && !errors.Is(err, ErrTerminal) {
				report(fmt.Errorf("job %d running: %w", r.id, err))
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			if _, err := one.RequestCancel(ctx, []int64{r.id}); err != nil && !errors.Is(err, ErrNotAMove) {
				report(fmt.Errorf("job %d cancel request: %w", r.id, err))
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	for i, r := range rs {
		if wins[i][0] == wins[i][1] {
			t.Errorf("job %d: failing won %v, cancelling won %v; exactly one ending must win", r.id, wins[i][0], wins[i][1])
			continue
		}
		want, outcome := lifecycle.Failed, "user_failure"
		if wins[i][1] {
			want, outcome = lifecycle.Cancelled, "cancelled"
		}
		j, err := two.Job(ctx, r.id)
		if err != nil {
			t.Fatal(err)
		}
		as, err := one.Attempts(ctx, r.id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != want || len(as) != 1 || as[0].Outcome != outcome || as[0].State != lifecycle.AttemptEnded {
			t.Errorf("job %d: %s with attempt %+v; the winner ended it %s (%s)", r.id, j.Status, as[0], want, outcome)
		}
		tasks, _ := one.Tasks(ctx, r.id)
		if tasks[0].Status != want {
			t.Errorf("job %d is %s, its task %s", r.id, want, tasks[0].Status)
		}
		// The outbox holds each move once, and none after the end.
		var ends, after int
		rows, err := one.db.QueryContext(ctx, `SELECT to_status FROM notify_events WHERE job_id = ? ORDER BY id`, r.id)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var to lifecycle.Status
			rows.Scan(&to)
			if ends > 0 {
				after++
			}
			if to.Terminal() {
				ends++
			}
		}
		rows.Close()
		if ends != 1 || after != 0 {
			t.Errorf("job %d: %d terminal events, %d after the end", r.id, ends, after)
		}
	}
}

// A new attempt and a cancel raced from two stores: the job never runs
// an attempt it was asked to cancel before the attempt was made, and a
// cancel asked after it is never lost.
func TestCancelRacingANewAttempt(t *testing.T) { onEach(t, testCancelRacingANewAttempt) }

func testCancelRacingANewAttempt(t *testing.T, b backend) {
	ctx := context.Background()
	one, u := openTest(t, b)
	two, err := OpenURL(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()
	var ids []int64
	for i := range 30 {
		id, err := one.CreateJob(ctx, &Job{Name: fmt.Sprintf("j%d", i), Spec: []byte(`{}`)}, []NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			if _, err := two.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting); err != nil && !errors.Is(err, ErrCancelRequested) {
				t.Errorf("job %d: new attempt: %v", id, err)
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			if _, err := one.RequestCancel(ctx, []int64{id}); err != nil {
				t.Errorf("job %d: cancel: %v", id, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, id := range ids {
		j, err := one.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !j.CancelRequested || j.Status != lifecycle.Cancelling {
			t.Errorf("job %d: %s, cancel requested %v: the cancel was lost", id, j.Status, j.CancelRequested)
		}
	}
}
