package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Several processes may open a new home at once (a CLI and the daemon it
// starts, or two CLIs): every one must get a migrated store.
func TestConcurrentOpensOfANewStore(t *testing.T) {
	ctx := context.Background()
	for round := 0; round < 20; round++ {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("state-%d.db", round))
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(ctx, path, nil)
				if err != nil {
					errs <- err
					return
				}
				_, err = s.CreateJob(ctx, &Job{Name: "x", Spec: []byte(`{}`)}, []NewTask{{}})
				s.Close()
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// Opening a store that is already migrated takes no write lock: a command
// that only reads, or that writes later, does not wait for the controller's
// writes just to open the store.
func TestOpenOfAMigratedStoreDoesNotWaitForWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	writer, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	tx, err := writer.BeginTx(ctx, nil) // holds the write lock until the end
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ctx2, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err = Open(ctx2, path, nil)
	if err != nil {
		t.Fatalf("open while another connection writes: %v", err)
	}
	defer s.Close()
	if _, err := s.Jobs(ctx2, JobFilter{}); err != nil {
		t.Fatalf("read while another connection writes: %v", err)
	}
}
