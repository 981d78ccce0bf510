package vm

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestSharedAnswersWhileYoung(t *testing.T) {
	clk := newClock()
	s := &Shared[int]{MaxAge: 5 * time.Second, Now: clk.Now}
	var calls atomic.Int32
	fetch := func(context.Context) (int, error) { return int(calls.Add(1)), nil }
	get := func() int {
		t.Helper()
		v, err := s.Get(context.Background(), "us-east-1", fetch)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	steps := []struct {
		advance time.Duration
		forget  bool
		want    int
	}{
		{0, false, 1},
		{4 * time.Second, false, 1}, // still young
		{time.Second, false, 2},     // exactly MaxAge old: asked afresh
		{time.Second, true, 3},      // forgotten: asked afresh
		{999 * time.Millisecond, false, 3},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		if st.forget {
			s.Forget("us-east-1")
		}
		if got := get(); got != st.want {
			t.Fatalf("step %d: answer %d, want %d", i, got, st.want)
		}
	}
	// Another key has an answer of its own.
	if v, _ := s.Get(context.Background(), "eu-west-1", fetch); v != 4 {
		t.Fatalf("another key got %d, want a call of its own (4)", v)
	}
}

func TestSharedNeverKeepsAnError(t *testing.T) {
	s := &Shared[int]{MaxAge: time.Hour, Now: newClock().Now}
	boom := errors.New("throttled")
	calls := 0
	fetch := func(context.Context) (int, error) {
		calls++
		if calls == 1 {
			return 0, boom
		}
		return 7, nil
	}
	if _, err := s.Get(context.Background(), "k", fetch); !errors.Is(err, boom) {
		t.Fatalf("first call: err %v, want %v", err, boom)
	}
	if v, err := s.Get(context.Background(), "k", fetch); err != nil || v != 7 {
		t.Fatalf("after an error: %d, %v; want a new call answering 7", v, err)
	}
}

func TestSharedWithoutMaxAgeAlwaysCalls(t *testing.T) {
	s := &Shared[int]{}
	calls := 0
	for range 3 {
		s.Get(context.Background(), "k", func(context.Context) (int, error) { calls++; return calls, nil })
	}
	if calls != 3 {
		t.Fatalf("%d calls, want 3", calls)
	}
}

// Callers that ask while the call is in flight wait for it and share it; one
// that gives up gets its context's error and does not fail the call.
func TestSharedCallersWaitForTheCallInFlight(t *testing.T) {
	s := &Shared[string]{MaxAge: time.Hour, Now: newClock().Now}
	release := make(chan struct{})
	started := make(chan struct{})
	var calls atomic.Int32
	fetch := func(ctx context.Context) (string, error) {
		calls.Add(1)
		close(started)
		select {
		case <-release:
			return "answer", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	firstCtx, giveUp := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := s.Get(firstCtx, "k", fetch)
		first <- err
	}()
	<-started

	waiterCtx, waiterGivesUp := context.WithCancel(context.Background())
	waiterGivesUp()
	if _, err := s.Get(waiterCtx, "k", fetch); !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter that gave up: err %v, want context.Canceled", err)
	}

	results := make(chan string, 3)
	for range 3 {
		go func() {
			v, err := s.Get(context.Background(), "k", fetch)
			if err != nil {
				v = err.Error()
			}
			results <- v
		}()
	}
	giveUp() // the caller that started the call gives up: the call goes on
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the caller that started the call gave up and the call failed: %v", err)
	}
	for range 3 {
		if v := <-results; v != "answer" {
			t.Fatalf("a waiter got %q, want the shared answer", v)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d calls, want 1", n)
	}
}
