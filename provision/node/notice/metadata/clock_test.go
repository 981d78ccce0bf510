package metadata

import (
	"context"
	"sortie/provision/node/notice"
	"sync"
	"time"
)

// testClock is the watcher's clock in tests: each wait returns at once and
// moves the time on by the wait asked for, and after a wait the test may
// stop the watch (after returns false).
type testClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
	after func(waits int) bool
}

func newTestClock(after func(waits int) bool) *testClock {
	return &testClock{now: time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC), after: after}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) After(d time.Duration) <-chan time.Time {
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

// watch runs Watch with the test clock until it returns, stopping it after
// maxWaits waits, and returns what it found.
func watch(t interface{ Helper() }, cfg notice.Config, maxWaits int) ([]notice.Notice, *testClock) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := newTestClock(func(n int) bool {
		if n >= maxWaits {
			cancel()
			return false
		}
		return true
	})
	cfg.Now, cfg.After, cfg.Metadata = clock.Now, clock.After, HTTP{}
	var found []notice.Notice
	notice.Watch(ctx, cfg, func(n notice.Notice) { found = append(found, n) })
	return found, clock
}
