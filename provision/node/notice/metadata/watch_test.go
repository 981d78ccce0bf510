package metadata

import (
	"context"
	"sortie/provision/node/notice"
	"sortie/provision/node/notice/noticetest"
)

// watch runs Watch with the test clock until it returns, stopping it after
// maxWaits waits, and returns what it found.
func watch(t interface{ Helper() }, cfg notice.Config, maxWaits int) ([]notice.Notice, *noticetest.Clock) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := noticetest.NewClock(func(n int) bool {
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
