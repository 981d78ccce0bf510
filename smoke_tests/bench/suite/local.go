package suite

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// LocalOptions is a run of many trivial jobs on the local provider,
// compared with running the same commands from a plain loop.
type LocalOptions struct {
	Bin      string
	Home     string
	Jobs     int
	Parallel int // launches at a time (controller.max_parallel_launches), and the loop's width
	Timeout  time.Duration
	Progress io.Writer
}

// LocalResult is the two wall times and how the jobs ended.
type LocalResult struct {
	Sortie, Plain time.Duration
	Statuses      map[string]int
}

// Ratio is sortie's wall time over the plain loop's.
func (r LocalResult) Ratio() float64 { return float64(r.Sortie) / float64(r.Plain) }

const localTask = `name: noop
run: "true"
`

// RunLocal times Jobs runs of `bash -c true`, Parallel at a time, then
// the same number of jobs running "true" submitted at once to a controller
// that launches Parallel at a time, from the first submit until the last
// job ended.
func RunLocal(ctx context.Context, o LocalOptions) (*LocalResult, error) {
	r := &LocalResult{}
	var err error
	fmt.Fprintf(o.Progress, "local: %d runs of bash -c true, %d at a time\n", o.Jobs, o.Parallel)
	if r.Plain, err = plainLoop(ctx, o.Jobs, o.Parallel); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("controller:\n  max_parallel_launches: %d\n", o.Parallel)
	h, err := openHome(ctx, o.Bin, o.Home, cfg, localTask)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	d, db, file := h.daemon, h.db, h.task
	fmt.Fprintf(o.Progress, "local: %d jobs on sortie\n", o.Jobs)
	t0 := time.Now()
	if _, _, err := submit(ctx, d, file, o.Jobs, 100, io.Discard); err != nil {
		return nil, err
	}
	if r.Statuses, err = waitAll(ctx, db, o.Jobs, 50*time.Millisecond, o.Timeout, 10*time.Second, o.Progress); err != nil {
		return r, err
	}
	last, n, err := latest(ctx, db, "ended_at")
	if err != nil {
		return r, err
	}
	if n != o.Jobs {
		return r, fmt.Errorf("%d of %d jobs have an end time", n, o.Jobs)
	}
	r.Sortie = last.Sub(t0)
	return r, d.Stop(time.Minute)
}

// plainLoop runs n `bash -c true`, width at a time, and returns the wall
// time.
func plainLoop(ctx context.Context, n, width int) (time.Duration, error) {
	work := make(chan int, n)
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	errs := make(chan error, width)
	t0 := time.Now()
	for w := 0; w < width; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if err := exec.CommandContext(ctx, "bash", "-c", "true").Run(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	select {
	case err := <-errs:
		return 0, fmt.Errorf("bash -c true: %w", err)
	default:
	}
	return el, nil
}
