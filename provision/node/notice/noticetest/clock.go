// Package noticetest is a clock for tests of notice watchers: each wait
// returns at once and moves the time on by the wait asked for. It is
// clocktest's clock with a watcher's After.
package noticetest

import (
	"context"
	"time"

	"sortie/strategy/clocktest"
)

// Clock is a watcher's Now and After in tests; after a wait the test may
// stop the watch (its after returns false).
type Clock struct {
	*clocktest.Clock
	after func(waits int) bool
}

// NewClock is a clock at a fixed time; after, when set, is called with the
// number of waits so far at each wait, and the wait never ends when it
// returns false.
func NewClock(after func(waits int) bool) *Clock {
	return &Clock{Clock: clocktest.New(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)), after: after}
}

// After records the wait and moves the time on by d.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.Skip(context.Background(), d)
	n, now := len(c.Waits()), c.Now()
	ch := make(chan time.Time, 1)
	if c.after == nil || c.after(n) {
		ch <- now
	}
	return ch
}
