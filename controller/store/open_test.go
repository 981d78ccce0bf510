package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
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
