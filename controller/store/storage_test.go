package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A node's report of its bucket syncs replaces its last one, per mount;
// each node keeps its own; the job lists them by attempt, node and path.
func TestRecordStorage(t *testing.T) { onEach(t, testRecordStorage) }

func testRecordStorage(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, a := runningAttempt(t, s)
	down := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	up := down.Add(30 * time.Second)
	first := []StorageSync{
		{Path: "ckpt", Store: "s3", Bucket: "ck", Mode: "MOUNT_CACHED", DownloadedAt: &down, DownloadedBytes: 10},
		{Path: "/data", Store: "s3", Bucket: "data", Mode: "COPY", DownloadedAt: &down, DownloadedBytes: 99, Error: "list s3://data: timeout"},
	}
	if err := s.RecordStorage(ctx, a, 0, first); err != nil {
		t.Fatal(err)
	}
	later := []StorageSync{{Path: "ckpt", Store: "s3", Bucket: "ck", Mode: "MOUNT_CACHED", DownloadedAt: &down, DownloadedBytes: 10,
		UploadedAt: &up, UploadedBytes: 5, UploadedTotal: 5}}
	if err := s.RecordStorage(ctx, a, 0, later); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordStorage(ctx, a, 1, later[:1]); err != nil {
		t.Fatal(err)
	}
	got, err := s.StorageSyncs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	row := func(node int, m StorageSync) StorageSync { m.Attempt, m.Node = a.Attempt, node; return m }
	want := []StorageSync{row(0, first[1]), row(0, later[0]), row(1, later[0])}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StorageSyncs (-want +got):\n%s", diff)
	}
	if other, err := s.StorageSyncs(ctx, id+1); err != nil || len(other) != 0 {
		t.Errorf("another job's syncs: %v, %v", other, err)
	}
}
