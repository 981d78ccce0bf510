package metadata_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"sortie/provision/node/notice"
	"sortie/provision/node/notice/imdsmock"
	"sortie/provision/node/notice/metadata"
)

// AWS's own metadata simulator, built once for the tests that need it.
var (
	mockOnce sync.Once
	mockBin  string
	mockErr  error
	mockDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if mockDir != "" {
		os.RemoveAll(mockDir)
	}
	os.Exit(code)
}

func startMock(t *testing.T, args ...string) *imdsmock.Mock {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs amazon-ec2-metadata-mock")
	}
	mockOnce.Do(func() {
		mockDir, mockErr = os.MkdirTemp("", "sortie-imdsmock-")
		if mockErr == nil {
			mockBin, mockErr = imdsmock.Build(context.Background(), mockDir)
		}
	})
	if mockErr != nil {
		t.Fatal(mockErr)
	}
	m, err := imdsmock.Start(t.Context(), mockBin, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

func TestMockSpotInterruption(t *testing.T) {
	m := startMock(t, "spot", "--action", "terminate")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var found []notice.Notice
	before := time.Now()
	notice.Watch(ctx, notice.Config{Source: notice.SourceAWS, Endpoint: m.Endpoint, Interval: 10 * time.Millisecond, Metadata: metadata.HTTP{}},
		func(n notice.Notice) { found = append(found, n) })
	if ctx.Err() != nil {
		t.Fatalf("no spot interruption heard within 30s; found %v; mock said:\n%s", found, m.Output())
	}
	var spot notice.Notice
	for _, n := range found {
		if n.Kind == notice.KindSpotInterruption {
			spot = n
		}
	}
	// The mock's notice is the real one's shape: terminate two minutes
	// after the question, to the second.
	if left := spot.Deadline.Sub(before); left < 118*time.Second || left > 122*time.Second {
		t.Errorf("notice %+v: deadline %s after asking, want about 2m", spot, left)
	}
}

func TestMockRebalanceBeforeInterruption(t *testing.T) {
	m := startMock(t, "--mock-delay-sec", "3600", "--rebalance-delay-sec", "0")
	var found []notice.Notice
	polls := 0
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	now := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	notice.Watch(ctx, notice.Config{
		Source: notice.SourceAWS, Endpoint: m.Endpoint, Metadata: metadata.HTTP{},
		Now: func() time.Time { return now },
		After: func(time.Duration) <-chan time.Time {
			polls++
			ch := make(chan time.Time, 1)
			if polls < 3 {
				ch <- now
			} else {
				cancel()
			}
			return ch
		},
	}, func(n notice.Notice) { found = append(found, n) })
	if len(found) != 1 || found[0].Kind != notice.KindRebalance || found[0].Ends() {
		t.Errorf("found %+v over 3 polls, want one rebalance recommendation and no interruption yet; mock said:\n%s", found, m.Output())
	}
}
