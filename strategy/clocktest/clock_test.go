package clocktest

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestAfterFiresWhenTheClockPassesIt(t *testing.T) {
	c := New(time.Time{})
	ch := c.After(time.Minute)
	c.Advance(59 * time.Second)
	select {
	case <-ch:
		t.Fatal("fired a second early")
	default:
	}
	c.Advance(time.Second)
	if got := <-ch; !got.Equal(Start.Add(time.Minute)) {
		t.Errorf("fired at %v, want %v", got, Start.Add(time.Minute))
	}
	if c.Waiting() != 0 {
		t.Errorf("%d waits left", c.Waiting())
	}
}

func TestSleepWaitsForAdvanceOrItsContext(t *testing.T) {
	c := New(time.Time{})
	done := make(chan bool)
	go func() { done <- c.Sleep(context.Background(), time.Second) }()
	c.BlockUntil(t, 1)
	c.Set(Start.Add(time.Hour))
	if !<-done {
		t.Error("Sleep said its context ended")
	}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { errc <- c.SleepErr(ctx, time.Second) }()
	c.BlockUntil(t, 1)
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Errorf("SleepErr: %v, want context.Canceled", err)
	}
	c.BlockUntil(t, 0)
}

func TestSkipMovesTheClockAndRecordsTheWait(t *testing.T) {
	c := New(time.Time{})
	later := c.After(3 * time.Second)
	if !c.Skip(context.Background(), 2*time.Second) || c.SkipErr(context.Background(), time.Second) != nil {
		t.Fatal("Skip said its context ended")
	}
	if got := c.Now(); !got.Equal(Start.Add(3 * time.Second)) {
		t.Errorf("now %v, want start+3s", got)
	}
	<-later
	if got, want := c.Waits(), []time.Duration{3 * time.Second, 2 * time.Second, time.Second}; !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c.Skip(ctx, time.Second) {
		t.Error("Skip on an ended context said it was live")
	}
}

func TestSteppingClockMovesAtEachLook(t *testing.T) {
	c := NewStepping(Start, time.Second)
	if a, b := c.Now(), c.Now(); !a.Equal(Start.Add(time.Second)) || b.Sub(a) != time.Second {
		t.Errorf("looks %v, %v", a, b)
	}
}

func TestWithin(t *testing.T) {
	n := 0
	// A deadline far beyond what the looks take: the test is of the looking,
	// not of how fast a loaded machine looks.
	if !Within(time.Minute, func() bool { n++; return n == 150 }) {
		t.Error("a condition that came true was not seen")
	}
	if Within(0, func() bool { return false }) {
		t.Error("a false condition was reported true")
	}
}

func TestBlockUntilAskedSeesAWaitAlreadyOver(t *testing.T) {
	c := New(time.Time{})
	go func() { <-c.After(0) }()
	c.BlockUntilAsked(t, 1)
	if c.Waiting() != 0 {
		t.Errorf("%d waits not over; a wait of 0 is over at once", c.Waiting())
	}
}

func TestHoldOverdueKeepsAWaitOfZeroUntilTheClockMoves(t *testing.T) {
	c := New(time.Time{}).HoldOverdue()
	ch := c.After(0)
	select {
	case <-ch:
		t.Fatal("a held wait of 0 ended before the clock moved")
	default:
	}
	c.Advance(0)
	<-ch
}
