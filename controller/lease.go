package controller

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"sortie/controller/store"
)

// Replicas: several controllers on one store share the unfinished jobs.
// A controller made a replica (AsReplica) drives only the jobs whose lease
// it holds (store.ClaimJobs), renews them every TTL/3 with its heartbeat,
// claims more while it holds less than its fair share, and stops driving a
// job at once when the job's lease is lost: every step of a job runs under
// a context that ends then, and every store write of the step checks the
// lease in its own transaction (its step writes through a store.Fenced
// handle, jobStep). A replica killed with
// kill -9 leaves its leases to expire; another claims the jobs and picks
// up their launches and attempts as a controller started again does.
// Without AsReplica the controller drives every job, as it always has.

// ReplicaOptions makes a controller one replica among several.
type ReplicaOptions struct {
	// Name is how the replica is listed; two live replicas cannot share
	// one.
	Name string
	// TTL is how long a lease lasts unless renewed: a killed replica's
	// jobs are driven again by another within about TTL plus a second.
	// Zero means DefaultLeaseTTL.
	TTL time.Duration
	// Host and PID say where the replica runs; empty and zero mean this
	// machine and process.
	Host string
	PID  int
}

// DefaultLeaseTTL is a lease's life unless renewed.
const DefaultLeaseTTL = 10 * time.Second

// MinLeaseTTL is the shortest TTL allowed: a renewal every TTL/3 must fit
// well within it even on a loaded store.
const MinLeaseTTL = 3 * time.Second

// claimBatch bounds how many jobs one claim takes: a replica that starts
// alone beside a long queue, or first among several, does not take every
// job before the others have registered.
const claimBatch = 500

// leaseSet is a replica's leases.
type leaseSet struct {
	opts ReplicaOptions
	id   string // this start's replica id, which the leases name

	mu   sync.Mutex
	held map[int64]*heldLease
	// renewed is when the last renewal succeeded.
	renewed time.Time
	// claims counts the claims recorded (add): a renewal forgets only
	// leases claimed before it read the store.
	claims uint64
}

type heldLease struct {
	lease store.Lease
	claim uint64 // ls.claims when it was recorded
	// ctx ends when the lease is lost; every step of the job runs under
	// it.
	ctx    context.Context
	cancel context.CancelFunc
}

// AsReplica makes c a replica: see ReplicaOptions. It is called before Run.
func (c *Controller) AsReplica(o ReplicaOptions) error {
	if o.Name == "" {
		return errors.New("replica name: empty; give each replica a name of its own (--replica NAME)")
	}
	o.TTL = cmp.Or(o.TTL, DefaultLeaseTTL)
	if o.TTL < MinLeaseTTL {
		return fmt.Errorf("lease TTL %s is below %s; renewals every TTL/3 need room: give %s or more", o.TTL, MinLeaseTTL, MinLeaseTTL)
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	o.PID = cmp.Or(o.PID, os.Getpid())
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("replica id: %w", err)
	}
	c.lease = &leaseSet{opts: o, id: o.Name + "-" + hex.EncodeToString(b), held: map[int64]*heldLease{}}
	return nil
}

// Held lists the jobs whose lease c holds (nil when c is not a replica).
func (c *Controller) Held() []int64 {
	if c.lease == nil {
		return nil
	}
	c.lease.mu.Lock()
	defer c.lease.mu.Unlock()
	out := make([]int64, 0, len(c.lease.held))
	for id := range c.lease.held {
		out = append(out, id)
	}
	return out
}

// leased returns what a step of job id runs under: a context that ends
// when the job's lease is lost, and the step, whose store writes check the
// lease. It says false when c, a replica, does not hold the job. A
// controller that is no replica drives every job under ctx, with its own
// store.
func (c *Controller) leased(ctx context.Context, id int64) (context.Context, *jobStep, func(), bool) {
	if c.lease == nil {
		return ctx, c.unleased(), func() {}, true
	}
	c.lease.mu.Lock()
	h := c.lease.held[id]
	c.lease.mu.Unlock()
	if h == nil {
		return ctx, nil, func() {}, false
	}
	lctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.ctx, cancel)
	s := &jobStep{Controller: c, Store: c.Store.Fenced(store.Fence{Holder: c.lease.id, Lease: h.lease})}
	return lctx, s, func() { stop(); cancel() }, true
}

// unleased is a step that writes through the controller's own store,
// checking no lease: that of a controller that is no replica, or of a job
// that has ended, which nobody holds.
func (c *Controller) unleased() *jobStep { return &jobStep{Controller: c, Store: c.Store} }

// leasedRun runs run under job id's lease, and nothing when it is not
// held; a write refused for a lost lease drops the lease at once.
func (c *Controller) leasedRun(id int64, run func(ctx context.Context, s *jobStep) error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		lctx, s, done, ok := c.leased(ctx, id)
		if !ok {
			return nil
		}
		defer done()
		return c.lostLease(id, run(lctx, s))
	}
}

// leasedStep is step under job id's lease: a follow-up of a job whose
// lease was lost stops.
func (c *Controller) leasedStep(ctx context.Context, id int64) (bool, error) {
	lctx, s, done, ok := c.leased(ctx, id)
	if !ok {
		return false, nil
	}
	defer done()
	more, err := s.step(lctx, id)
	return more, c.lostLease(id, err)
}

// lostLease drops job id's lease when err says another replica has it; the
// error is then no failure of the step, only its end.
func (c *Controller) lostLease(id int64, err error) error {
	if c.lease == nil || !errors.Is(err, store.ErrLeaseLost) {
		return err
	}
	c.lease.drop(id)
	c.Log.Info("lease lost; another replica drives the job", "job", id)
	return nil
}

func (ls *leaseSet) drop(id int64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if h := ls.held[id]; h != nil {
		h.cancel()
		delete(ls.held, id)
	}
}

// dropAll gives up every lease in memory: the replica can no longer tell
// which it holds.
func (ls *leaseSet) dropAll() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for id, h := range ls.held {
		h.cancel()
		delete(ls.held, id)
	}
}

// add records leases just claimed; a job held at an older generation
// (claimed again after its lease expired) gets the new one, and its steps
// under the old one stop.
func (ls *leaseSet) add(got []store.Lease) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range got {
		if h := ls.held[l.Job]; h != nil {
			if h.lease.Gen == l.Gen {
				continue
			}
			h.cancel()
		}
		ls.claims++
		ctx, cancel := context.WithCancel(context.Background())
		ls.held[l.Job] = &heldLease{lease: l, claim: ls.claims, ctx: ctx, cancel: cancel}
	}
}

// keep makes the leases in memory those a renewal returned: a job missing
// from them was taken by another replica (or ended), and its steps stop.
// Leases recorded after claims (a claim made while the renewal ran) are
// not the renewal's to judge: the store was read before them.
func (ls *leaseSet) keep(got []store.Lease, at time.Time, claims uint64) {
	still := make(map[int64]int64, len(got))
	for _, l := range got {
		still[l.Job] = l.Gen
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for id, h := range ls.held {
		if h.claim > claims {
			continue
		}
		if gen, ok := still[id]; !ok || gen != h.lease.Gen {
			h.cancel()
			delete(ls.held, id)
		}
	}
	// A lease renewed that is not in memory (a claim whose answer was
	// lost) is held all the same.
	for _, l := range got {
		if ls.held[l.Job] == nil {
			ls.claims++
			ctx, cancel := context.WithCancel(context.Background())
			ls.held[l.Job] = &heldLease{lease: l, claim: ls.claims, ctx: ctx, cancel: cancel}
		}
	}
	ls.renewed = at
}

func (ls *leaseSet) count() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.held)
}

// register records the replica in the store and claims its first jobs.
func (c *Controller) register(ctx context.Context) error {
	ls := c.lease
	err := c.Store.RegisterReplica(ctx, store.Replica{ID: ls.id, Name: ls.opts.Name, Host: ls.opts.Host, PID: ls.opts.PID, TTL: ls.opts.TTL})
	if err != nil {
		return err
	}
	ls.mu.Lock()
	ls.renewed = c.Now()
	ls.mu.Unlock()
	c.Log.Info("replica registered", "replica", ls.opts.Name, "id", ls.id, "lease_ttl", ls.opts.TTL)
	_, err = c.claim(ctx)
	return err
}

// renewLoop renews the replica's leases every TTL/3 until ctx ends. When
// renewals fail for so long that the leases may have expired, the replica
// stops driving every job until a renewal says which it still holds.
func (c *Controller) renewLoop(ctx context.Context) {
	ls := c.lease
	every := ls.opts.TTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.renew(ctx)
	}
}

// renew is one renewal of the replica's leases.
func (c *Controller) renew(ctx context.Context) {
	ls := c.lease
	started := c.Now()
	ls.mu.Lock()
	claims := ls.claims
	ls.mu.Unlock()
	got, err := c.Store.RenewLeases(ctx, ls.id, ls.opts.TTL)
	if err == nil {
		ls.keep(got, started, claims)
		return
	}
	if ctx.Err() != nil {
		return
	}
	ls.mu.Lock()
	since := c.Now().Sub(ls.renewed)
	ls.mu.Unlock()
	c.Log.Warn("renew leases", "err", err, "since_last_renewal", since)
	// The next renewal comes TTL/3 later: if it might come after the
	// leases expire, stop driving now rather than race another replica.
	if since+ls.opts.TTL/3 >= ls.opts.TTL {
		c.Log.Warn("leases may have expired; driving no job until a renewal succeeds")
		ls.dropAll()
	}
}

// claim takes more jobs while the replica holds less than its fair share
// of the unfinished jobs (their number over the live replicas, rounded
// up), at most claimBatch at a time, and returns the jobs it claimed.
func (c *Controller) claim(ctx context.Context) ([]int64, error) {
	ls := c.lease
	load, err := c.Store.LeaseLoad(ctx, ls.id)
	if err != nil {
		return nil, fmt.Errorf("read the lease load: %w", err)
	}
	// What the replica holds is counted in the store: those in memory
	// include jobs that ended since the last renewal.
	n := claimCount(load)
	if n == 0 {
		return nil, nil
	}
	got, err := c.Store.ClaimJobs(ctx, ls.id, n, ls.opts.TTL)
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	ls.add(got)
	ids := make([]int64, len(got))
	for i, l := range got {
		ids[i] = l.Job
	}
	if len(ids) > 0 {
		c.Log.Info("claimed jobs", "count", len(ids), "held", ls.count())
	}
	return ids, nil
}

// claimCount is how many jobs a replica should claim under load: up to its
// fair share, at most claimBatch and what is claimable.
func claimCount(load store.LeaseLoad) int {
	if load.Claimable == 0 {
		return 0
	}
	live := max(load.Live, 1)
	share := (load.Active + live - 1) / live
	return max(0, min(share-load.Held, claimBatch, load.Claimable))
}

// release gives up the replica's leases and its row as it stops, so that
// the others take its jobs at once.
func (c *Controller) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Store.ReleaseLeases(ctx, c.lease.id); err != nil {
		c.Log.Warn("release leases; the other replicas take the jobs when they expire", "err", err)
		return
	}
	c.Log.Info("leases released", "replica", c.lease.opts.Name)
}

// readShard reads the jobs a tick reconciles and their open attempts: every
// unfinished job of the shard, or those the replica holds.
func (c *Controller) readShard(ctx context.Context, scope tickScope) ([]*store.Job, []*store.Attempt, error) {
	shards, shard := scope.shards, scope.shard
	if scope.only != nil {
		shards, shard = 1, 0
	}
	var jobs []*store.Job
	var open []*store.Attempt
	var err error
	if c.lease == nil {
		jobs, err = c.Store.ActiveJobsShard(ctx, shards, shard)
	} else {
		jobs, err = c.Store.HeldJobsShard(ctx, c.lease.id, shards, shard)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list jobs: %w", err)
	}
	if c.lease == nil {
		open, err = c.Store.OpenAttemptsShard(ctx, shards, shard)
	} else {
		open, err = c.Store.HeldOpenAttemptsShard(ctx, c.lease.id, shards, shard)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list attempts: %w", err)
	}
	if scope.only == nil {
		return jobs, open, nil
	}
	keepJobs := jobs[:0]
	for _, j := range jobs {
		if scope.only[j.ID] {
			keepJobs = append(keepJobs, j)
		}
	}
	keepOpen := open[:0]
	for _, a := range open {
		if scope.only[a.JobID] {
			keepOpen = append(keepOpen, a)
		}
	}
	return keepJobs, keepOpen, nil
}

// drainable says whether c drains replaced attempt a, and under which
// context and step: a replica drains those of the jobs it holds, under
// their leases, and those of jobs that have ended, which nobody holds.
func (c *Controller) drainable(ctx context.Context, a *store.Attempt) (context.Context, *jobStep, func(), bool) {
	lctx, s, done, ok := c.leased(ctx, a.JobID)
	if ok {
		return lctx, s, done, true
	}
	j, err := c.Store.Job(ctx, a.JobID)
	if err != nil || !j.Status.Terminal() {
		return ctx, nil, func() {}, false
	}
	return ctx, c.unleased(), func() {}, true
}

// claimEvery is how often a replica looks for jobs to claim: every second,
// or TTL/3 when shorter, so that a dead replica's jobs are taken soon
// after their leases expire.
func claimEvery(ttl time.Duration) time.Duration { return min(time.Second, ttl/3) }

// jobStep is one step of one job: the controller, with Store the handle
// the step writes through. On a replica it is bound to the job's lease
// (store.Fenced), so a step of a job whose lease was lost writes nothing;
// otherwise it is the controller's own store.
type jobStep struct {
	*Controller
	Store *store.Store
}
