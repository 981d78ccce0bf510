// Package noticetest is a clock for tests of notice watchers: each wait
// returns at once and moves the time on by the wait asked for.
package noticetest

import (
	"sync"
	"time"
)

// Clock is a watcher's Now and After in tests; after a wait the test may
// stop the watch (its after returns false).
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
	after func(waits int) bool
}

// NewClock is a clock at a fixed time; after, when set, is called with the
// number of waits so far at each wait, and the wait never ends when it
// returns false.
func NewClock(after func(waits int) bool) *Clock {
	return &Clock{now: time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC), after: after}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After records the wait and moves the time on by d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	n, now := len(c.waits), c.now
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if c.after == nil || c.after(n) {
		ch <- now
	}
	return ch
}

// Waits are the waits asked for so far, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
