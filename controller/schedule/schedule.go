// Package schedule decides when a step of a job runs, and that no two steps
// of one job run at once. It knows jobs only by their id and runs the
// functions it is given; reading the store and asking providers is the
// caller's. It imports nothing else of sortie's.
//
// A caller's tick takes an Epoch (Read) before it reads the store, then
// hands each job it read to Go (a goroutine of its own, for steps that may
// take long, like a launch) or Check (a pool of at most Checkers goroutines,
// for the many short checks of running jobs). Either claims the job first:
// a job already claimed, or released since the epoch (its step has moved it
// on, so the tick's view of it is stale), is left to the next tick. A step
// may ask to go on with its job at a time (ContinueAt); the job then stays
// claimed, and Step runs at that time, unless the time is further than
// Horizon, which is left to the ticks. Wait waits until every claimed job
// has been released.
package schedule

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Epoch is a count of releases, taken when a tick reads the store.
type Epoch uint64

// Work is one step of one job, with the caller's view of the job.
type Work struct {
	ID  int64
	Run func(ctx context.Context) error
}

// Config is what a Queue is given. It must not change once work has started.
type Config struct {
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Sleep waits d, or until ctx ends (false); nil waits on a real timer.
	Sleep func(ctx context.Context, d time.Duration) bool
	// Checkers bounds how many works of one Check run at once (at least 1).
	Checkers int
	// Horizon is the longest a job stays claimed waiting for its next
	// step; a later one is left to the ticks, so that no goroutine waits
	// long.
	Horizon time.Duration
	// Step goes on with job id: it reads the job afresh and moves it a
	// step, and says false when nothing is left to do (the job ended). Nil
	// turns follow-ups off.
	Step func(ctx context.Context, id int64) (bool, error)
	// Report is told of each error a Run or Step returned while its
	// context was live; nil drops them.
	Report func(id int64, err error)
}

// Queue schedules the steps of jobs; see the package comment. New makes one.
type Queue struct {
	Config

	mu   sync.Mutex
	busy map[int64]bool // claimed jobs: the work in flight
	idle *sync.Cond     // signalled when busy empties
	// released is when each job was last released, by a count of releases:
	// a tick that read the store before then has a stale view of the job.
	released map[int64]Epoch
	releases Epoch
	lastRead Epoch
	cont     map[int64]time.Time // claimed jobs to go on with, and when
	// following: ContinueAt is heeded (Follow).
	following atomic.Bool
}

// New returns a queue that runs work as cfg says.
func New(cfg Config) *Queue {
	q := &Queue{
		Config:   cfg,
		busy:     map[int64]bool{},
		released: map[int64]Epoch{},
		cont:     map[int64]time.Time{},
	}
	q.idle = sync.NewCond(&q.mu)
	return q
}

// Follow turns follow-ups on or off. Off (the default), a claim ends with
// its Run: a caller driving ticks by hand sees one step per job per tick
// and never waits; a running loop turns them on.
func (q *Queue) Follow(on bool) { q.following.Store(on) }

// Read marks a tick's read of the store and returns its epoch. A job
// released after the read has moved on since, and work claimed with this
// epoch leaves it to the next tick. Reads come one after another, as the
// ticks of one loop do.
func (q *Queue) Read() Epoch {
	q.mu.Lock()
	defer q.mu.Unlock()
	// Releases older than the previous read can no longer make any read
	// stale: no claim uses an older epoch.
	for id, at := range q.released {
		if at <= q.lastRead {
			delete(q.released, id)
		}
	}
	q.lastRead = q.releases
	return q.releases
}

// Go claims w's job for a tick that read it at e and runs w in a goroutine
// of its own, then its follow-ups, then releases the job. It says whether
// the job was claimed.
func (q *Queue) Go(ctx context.Context, e Epoch, w Work) bool {
	q.mu.Lock()
	ok := q.claim(w.ID, e)
	q.mu.Unlock()
	if !ok {
		return false
	}
	go q.run(ctx, w, false)
	return true
}

// Check claims the jobs of ws for a tick that read them at e, runs the
// claimed ones at most Checkers at a time and returns at once; it returns
// how many it claimed. A work that asked to go on leaves the pool for a
// goroutine of its own, so that a long follow-up (a launch) never holds a
// checker. Each call has its own checkers: a tick's checks never wait for
// an earlier tick's.
func (q *Queue) Check(ctx context.Context, e Epoch, ws []Work) int {
	claimed := make([]Work, 0, len(ws))
	q.mu.Lock()
	for _, w := range ws {
		if q.claim(w.ID, e) {
			claimed = append(claimed, w)
		}
	}
	q.mu.Unlock()
	var next atomic.Int64
	for range min(len(claimed), max(q.Checkers, 1)) {
		go func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(claimed) {
					return
				}
				q.run(ctx, claimed[k], true)
			}
		}()
	}
	return len(claimed)
}

// ContinueAt asks for a step of job id at t, when follow-ups are on and the
// job is claimed: the step under way asks for the next one.
func (q *Queue) ContinueAt(id int64, t time.Time) {
	if !q.following.Load() {
		return
	}
	q.mu.Lock()
	if q.busy[id] {
		q.cont[id] = t
	}
	q.mu.Unlock()
}

// Wait blocks until every claimed job has been released: each Run and
// Step started has returned.
func (q *Queue) Wait() {
	q.mu.Lock()
	for len(q.busy) > 0 {
		q.idle.Wait()
	}
	q.mu.Unlock()
}

// claim takes job id, unless it is claimed or was released after epoch e.
// The caller holds mu.
func (q *Queue) claim(id int64, e Epoch) bool {
	if q.busy[id] || q.released[id] > e {
		return false
	}
	q.busy[id] = true
	return true
}

// run runs w and its follow-ups, then releases its job. A pooled work's
// follow-ups go on in a goroutine of their own, and run returns at once.
func (q *Queue) run(ctx context.Context, w Work, pooled bool) {
	err := w.Run(ctx)
	finish := func() { q.done(ctx, w.ID, q.followUp(ctx, w.ID)) }
	switch {
	case err != nil || !q.pending(w.ID):
		q.done(ctx, w.ID, err)
	case pooled:
		go finish()
	default:
		finish()
	}
}

// pending says whether a job just stepped has a follow-up to run.
func (q *Queue) pending(id int64) bool {
	if !q.following.Load() || q.Step == nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.cont[id]
	return ok
}

// followUp steps job id for as long as each step asks to go on within the
// horizon.
func (q *Queue) followUp(ctx context.Context, id int64) error {
	for {
		at, ok := q.take(id)
		if !ok {
			return nil
		}
		if wait := at.Sub(q.now()); wait > 0 {
			if wait > q.Horizon || !q.sleep(ctx, wait) {
				return nil
			}
		}
		more, err := q.Step(ctx, id)
		if err != nil || !more {
			return err
		}
	}
}

func (q *Queue) take(id int64) (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t, ok := q.cont[id]
	delete(q.cont, id)
	return t, ok
}

// done ends the claim of job id, reporting err: the one place work in
// flight ends. A follow-up its last step asked for goes with it; the
// ticks see the job again.
func (q *Queue) done(ctx context.Context, id int64, err error) {
	if err != nil && ctx.Err() == nil && q.Report != nil {
		q.Report(id, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.busy, id)
	delete(q.cont, id)
	q.releases++
	q.released[id] = q.releases
	if len(q.busy) == 0 {
		q.idle.Broadcast()
	}
}

func (q *Queue) now() time.Time {
	if q.Now == nil {
		return time.Now()
	}
	return q.Now()
}

func (q *Queue) sleep(ctx context.Context, d time.Duration) bool {
	if q.Sleep != nil {
		return q.Sleep(ctx, d)
	}
	return RealSleep(ctx, d)
}

// RealSleep waits d on a real timer, or until ctx ends (false): what a nil
// Config.Sleep does.
func RealSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
