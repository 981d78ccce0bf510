package storm

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"sortie/strategy"
)

// run is one storm's controller, its store and the watcher reading it.
type run struct {
	name      string // the cloud, for progress lines
	c         *ctl
	db        *sql.DB
	w         *watcher
	stopWatch func()
}

// begin starts the controller program with env added to its environment,
// opens its store and starts watching it. close stops all of it.
func begin(ctx context.Context, name string, o Options, env []string) (*run, error) {
	c := newCtl(o.Bin, o.Home, env, o.Progress, o.Seed)
	if err := c.start(ctx, 1); err != nil {
		return nil, err
	}
	db, err := openDB(o.Home)
	if err != nil {
		c.kill()
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	x := &run{name: name, c: c, db: db, w: newWatcher(db, o.Limit)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); x.w.run(wctx, 200*time.Millisecond) }()
	x.stopWatch = func() { cancel(); wg.Wait() }
	return x, nil
}

func (x *run) close() {
	x.stopWatch()
	x.db.Close()
	x.c.kill()
}

// submitSpan is how long jobs keep arriving: the first two thirds of the
// storm's expected length.
func submitSpan(o Options) time.Duration {
	return time.Duration(o.Kills) * (o.KillMin + o.KillMax) / 2 * 2 / 3
}

// settle waits for the submitting to finish (subErr) and for every job to
// end, stops the controller, reads the jobs and checks what every storm
// checks: none lost, what the watcher saw, and how each job ended under
// policy.
func (x *run) settle(ctx context.Context, o Options, r *Result, subErr <-chan error, policy strategy.Policy) (map[int64]*job, error) {
	if err := <-subErr; err != nil {
		return nil, err
	}
	if err := waitEnded(ctx, x.db, o.Jobs, o.Timeout, o.Progress); err != nil {
		fmt.Fprintf(o.Progress, "%s: %v\n", x.name, err)
	}
	x.w.sample(ctx)
	if err := x.c.stop(time.Minute); err != nil {
		return nil, err
	}
	jobs, err := readJobs(ctx, x.db)
	if err != nil {
		return nil, err
	}
	if len(jobs) != o.Jobs {
		r.problem(&r.Lost, "%d jobs in the store, %d submitted", len(jobs), o.Jobs)
	}
	r.checkWatched(x.w)
	r.checkCommon(jobs, policy)
	return jobs, nil
}
