// Package clocktest is the clock and the waits of sortie's tests: a Clock
// that moves only when a test moves it (or when a wait is made to move it),
// and Eventually, which waits for a condition with a deadline.
//
// The code under test takes its clock as functions (a Config's Now, Sleep
// and After); a Clock's methods have those functions' signatures:
//
//	Now   func() time.Time
//	Sleep func(ctx, d) bool     (the controller, its schedule)
//	Sleep func(ctx, d) error    (SleepErr: the providers)
//	After func(d) <-chan time.Time
//
// Sleep, SleepErr and After wait until Advance or Set moves the clock past
// their end; Skip and SkipErr are sleeps that move the clock themselves and
// return at once. BlockUntil lets a test wait until the code is waiting, so
// that no test sleeps to let a goroutine reach its wait.
//
// It imports only the standard library, so that every package's tests,
// controller's and provision's alike, may import it.
package clocktest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// Start is the time a clock made by New(time.Time{}) starts at.
var Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is a test's clock. Its zero value is not usable: see New.
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
	// hold keeps waits of 0 or less until the clock is next moved.
	hold bool
	// waiting are the waits not yet over, woken when the clock reaches
	// their end.
	waiting []*wait
	// waits are all the waits asked for, in order.
	waits []time.Duration
	// changed is closed, and replaced, whenever waiting or waits change.
	changed chan struct{}
}

type wait struct {
	until time.Time
	fire  chan time.Time
}

// New is a clock at start (Start when zero) that moves only when told.
func New(start time.Time) *Clock {
	if start.IsZero() {
		start = Start
	}
	return &Clock{now: start, changed: make(chan struct{})}
}

// NewStepping is a clock at start that moves by step after each look
// (Now returns start+step first), for code that must see time pass
// between any two looks.
func NewStepping(start time.Time, step time.Duration) *Clock {
	c := New(start)
	c.step = step
	return c
}

// HoldOverdue makes every wait last until the test moves the clock, a
// wait of 0 or less too (Advance(0) ends it): a test may then look at
// what happened before the wait ended. It returns c.
func (c *Clock) HoldOverdue() *Clock {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold = true
	return c
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// Advance moves the clock on by d, ending the waits it passes.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// Set moves the clock to t (which may be earlier), ending the waits it
// passes.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(t)
}

func (c *Clock) setLocked(t time.Time) {
	c.now = t
	kept := c.waiting[:0]
	for _, w := range c.waiting {
		if w.until.After(t) {
			kept = append(kept, w)
			continue
		}
		w.fire <- t
	}
	if len(kept) != len(c.waiting) {
		clear(c.waiting[len(kept):])
		c.waiting = kept
		c.changedLocked()
	}
}

func (c *Clock) changedLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// After is time.After on the clock: the channel receives the clock's time
// once Advance or Set has moved it d on (at once when d <= 0).
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.changedLocked()
	w := &wait{until: c.now.Add(d), fire: make(chan time.Time, 1)}
	if d <= 0 && !c.hold {
		w.fire <- c.now
		return w.fire
	}
	c.waiting = append(c.waiting, w)
	return w.fire
}

// Sleep waits until the clock has moved d on, and says whether it did
// before ctx ended.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) bool {
	return c.SleepErr(ctx, d) == nil
}

// SleepErr is Sleep that returns ctx's error when ctx ends first.
func (c *Clock) SleepErr(ctx context.Context, d time.Duration) error {
	fire := c.After(d)
	select {
	case <-fire:
		return ctx.Err()
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, w := range c.waiting {
			if w.fire == fire {
				c.waiting = slices.Delete(c.waiting, i, i+1)
				c.changedLocked()
				break
			}
		}
		return ctx.Err()
	}
}

// Skip is a sleep that waits for nothing: it moves the clock on by d and
// says whether ctx is still live.
func (c *Clock) Skip(ctx context.Context, d time.Duration) bool {
	return c.SkipErr(ctx, d) == nil
}

// SkipErr is Skip that returns ctx's error.
func (c *Clock) SkipErr(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.changedLocked()
	c.setLocked(c.now.Add(d))
	c.mu.Unlock()
	return ctx.Err()
}

// Waits are the durations every After, Sleep and Skip asked for, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}

// Waiting is the number of waits (After, Sleep) not yet over.
func (c *Clock) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiting)
}

// BlockUntil waits until n waits (After, Sleep) are not yet over, and
// fails t when that takes more than Patience of real time. It wakes on
// each change of the waits: it never sleeps.
func (c *Clock) BlockUntil(t testing.TB, n int) {
	t.Helper()
	c.block(t, fmt.Sprintf("%d waits not yet over", n), func() bool { return len(c.waiting) == n })
}

// BlockUntilAsked waits until n waits (After, Sleep, Skip) have been
// asked for in all, over or not, as BlockUntil waits.
func (c *Clock) BlockUntilAsked(t testing.TB, n int) {
	t.Helper()
	c.block(t, fmt.Sprintf("%d waits asked for", n), func() bool { return len(c.waits) >= n })
}

// block waits until cond, called with c.mu held, holds.
func (c *Clock) block(t testing.TB, what string, cond func() bool) {
	t.Helper()
	limit := time.NewTimer(Patience)
	defer limit.Stop()
	for {
		c.mu.Lock()
		ok, changed := cond(), c.changed
		waiting, waits := len(c.waiting), len(c.waits)
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-limit.C:
			t.Fatalf("clocktest: not %s within %v (%d asked for, %d not over)", what, Patience, waits, waiting)
		}
	}
}
