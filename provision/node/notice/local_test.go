package notice

import (
	"context"
	"os"
	"path/filepath"
	"sortie/provision/node/notice/noticetest"
	"strings"
	"testing"
	"time"
)

func TestLocalRequest(t *testing.T) {
	dir := t.TempDir()
	deadline := time.Date(2026, 11, 30, 11, 0, 30, 0, time.UTC)
	ctx := t.Context()
	var found []Notice
	clock := noticetest.NewClock(func(n int) bool {
		if n == 3 {
			if err := WriteRequest(dir, Request{Deadline: deadline}); err != nil {
				t.Error(err)
			}
		}
		return n < 10
	})
	Watch(ctx, Config{Source: SourceLocal, NodeDir: dir, Now: clock.Now, After: clock.After}, func(n Notice) { found = append(found, n) })
	if len(found) != 1 {
		t.Fatalf("found %v, want one notice", found)
	}
	n := found[0]
	if n.Kind != KindPreempted || n.Source != SourceLocal || !n.Deadline.Equal(deadline) || !n.At.Equal(clock.Now()) {
		t.Errorf("notice %+v, want preempted from local with deadline %s, heard at %s", n, deadline, clock.Now())
	}
	if len(clock.Waits()) != 3 {
		t.Errorf("waited %d times, want 3: heard at the poll after the request, then done", len(clock.Waits()))
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".notice-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestLocalUnreadableRequestIsRetried(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, RequestFile), []byte("{half"), 0o644); err != nil {
		t.Fatal(err)
	}
	var found []Notice
	clock := noticetest.NewClock(func(n int) bool {
		if n == 2 {
			if err := WriteRequest(dir, Request{Kind: KindSpotInterruption}); err != nil {
				t.Error(err)
			}
		}
		return n < 10
	})
	Watch(t.Context(), Config{Source: SourceLocal, NodeDir: dir, Now: clock.Now, After: clock.After}, func(n Notice) { found = append(found, n) })
	if len(found) != 1 || found[0].Kind != KindSpotInterruption {
		t.Errorf("found %v, want the spot interruption written after the unreadable file", found)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Source: "azure"}, `notice source "azure": unknown; use "aws-imds", "gce-metadata" or "local"`},
		{Config{Source: SourceLocal}, "node directory is empty"},
		{Config{Source: SourceAWS, Interval: -time.Second}, "notice interval -1s: is negative"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.cfg, err, tc.want)
		}
		called := false
		Watch(t.Context(), tc.cfg, func(Notice) { called = true })
		if called {
			t.Errorf("%+v: an invalid watch reported a notice", tc.cfg)
		}
	}
	for _, ok := range []Config{{}, {Source: SourceAWS}, {Source: SourceGCE}, {Source: SourceLocal, NodeDir: "/x"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

// A cloud source without a metadata watcher (a program that did not link
// package metadata) hears nothing and returns at once.
func TestMetadataSourceWithoutWatcher(t *testing.T) {
	for _, source := range []string{SourceAWS, SourceGCE} {
		called := false
		clock := noticetest.NewClock(func(int) bool { t.Fatal("waited"); return false })
		Watch(t.Context(), Config{Source: source, Now: clock.Now, After: clock.After}, func(Notice) { called = true })
		if called {
			t.Errorf("%s without a watcher reported a notice", source)
		}
	}
}

type fakeMetadata struct{ aws, gce int }

func (f *fakeMetadata) WatchAWS(ctx context.Context, c Config, report func(Notice) bool) {
	f.aws++
	report(Notice{Kind: KindSpotInterruption, Source: SourceAWS, At: c.Now()})
}

func (f *fakeMetadata) WatchGCE(ctx context.Context, c Config, report func(Notice) bool) {
	f.gce++
	report(Notice{Kind: KindPreempted, Source: SourceGCE, At: c.Now()})
}

// Watch hands the cloud sources to the metadata watcher, with the defaults
// filled in.
func TestWatchHandsCloudsToTheMetadataWatcher(t *testing.T) {
	f := &fakeMetadata{}
	var got []string
	for _, source := range []string{SourceAWS, SourceGCE} {
		Watch(t.Context(), Config{Source: source, Metadata: f}, func(n Notice) { got = append(got, n.Kind) })
	}
	if f.aws != 1 || f.gce != 1 || len(got) != 2 || got[0] != KindSpotInterruption || got[1] != KindPreempted {
		t.Errorf("watcher called aws %d gce %d times, notices %v", f.aws, f.gce, got)
	}
}
