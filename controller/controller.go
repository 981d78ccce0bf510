// Package controller is the reconcile loop of managed jobs: one controller
// per SORTIE_HOME reconciles every job that has not ended, launching
// clusters, watching their nodes, applying the strategy's decisions and
// keeping every attempt's logs. The store is the only state; the controller
// can be killed at any moment and picks up where it was when started again.
//
// Where things are: controller.go the loop and its ticks; reconcile.go one
// step of one job; launch.go finding a cluster; start.go starting the task
// on it; observe.go watching a running attempt; end.go ending an attempt
// with the strategy's decision; followup.go when a job goes on between
// ticks (the schedule package claims jobs, bounds the checks and runs the
// follow-ups); sweep.go orphaned clusters; keep.go logs and secrets kept on
// the controller; serve.go the controller process.
//
// It must not import controller/service, sortie/cmd/... or a cloud SDK: the
// loop reaches clouds through the registry (controller/clouds) it is given,
// and the service sits above it.
package controller

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/lifecycle"
	"sortie/controller/metrics"
	"sortie/controller/prices"
	"sortie/controller/schedule"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/price"
	"sortie/schema"
	"sortie/strategy"
)

// Providers returns the provider for a cloud name.
type Providers interface {
	Provider(ctx context.Context, cloud string) (provision.Provider, error)
	// Opened lists the clouds whose providers are already open, for the
	// orphan sweep.
	Opened() []string
}

// Controller reconciles jobs.
type Controller struct {
	Store     *store.Store
	Config    config.Config
	Providers Providers
	Log       *slog.Logger
	Now       func() time.Time
	Rand      func() float64
	// Sleep waits d, or until ctx ends (false): the waits a stopped task's
	// grace is made of. Nil waits on a real timer; a test passes time on
	// its clock (Now) instead.
	Sleep func(ctx context.Context, d time.Duration) bool
	// LogDeadline bounds reading each node (exit code, log) when an
	// attempt ends; zero means 20s.
	LogDeadline time.Duration
	// Pause, when set, is called at the pause points (pause.go) that
	// crash tests aim kills at; nil costs nothing.
	Pause func(point string, job int64, attempt int)
	// Metrics are what the controller counts; New makes them, with the
	// store's job counts as the sortie_jobs gauge and its transactions
	// timed.
	Metrics *metrics.Metrics
	// Prices answer what an attempt costs, from the store's price cache
	// (never a call to a cloud): each attempt's cost, max_cost and
	// max_hourly_cost are counted with them (cost.go); nil is no price
	// known (costs unknown, no budget stops a job); they also order the
	// candidates of resources.placement: cheapest. PriceRefresher keeps the cache fresh in
	// the background once the program running the controller starts it
	// (serve.go). New makes both over the store.
	Prices         price.Book
	PriceRefresher *prices.Refresher

	// sched claims jobs for the ticks, runs their steps and follows them
	// up; its clock is Now, its sleep a real timer unless a test sets one.
	sched *schedule.Queue
	// specs are the pipelines of the jobs stepped lately, decoded once.
	specs  specCache
	launch chan struct{} // launch slots
	// cancels bounds the cancels that run at once (maxParallelCancels).
	cancels chan struct{}
	// limits holds each job's max_duration per task ([]time.Duration, zero
	// for none), read from its spec once; dropped when the job ends.
	limits sync.Map
	// budgets holds each job's max_cost per task (cost.go).
	budgets budgets
	wake    chan struct{}
	// aborts holds, for each job whose launch or start is under way, what
	// stops it: a cancel requested meanwhile stops it at once.
	aborts abortSet
	// seen holds, for each task (taskKey) whose attempt ended in a restart
	// or recovery, when the controller saw it end: the next attempt's
	// request observes the decision latency.
	seen sync.Map
	// drains are the replaced attempts being watched until their nodes go.
	drains drains
	// storageSeen holds, per attempt and node, the bucket syncs last
	// recorded, so that an unchanged report is not written again.
	storageSeen sync.Map
	// ownerSpend holds, per owner, whether their monthly budget was
	// spent when last read (userbudget.go).
	ownerSpend sync.Map
	// lease, when set (AsReplica), makes the controller a replica that
	// drives only the jobs whose lease it holds (lease.go).
	lease *leaseSet
	// limited says whether the last admission pass found any limit
	// (config.yaml's or a quota's): limitsOn, limitsOff, or 0 before the
	// first pass (config.yaml's say then).
	limited atomic.Int32
}

// maxParallelChecks bounds how many running jobs a tick checks at once.
// Most checks find nothing to do; the few that find an attempt ended, whose
// decision a user waits for, then share the CPU with a few others rather
// than with every running job. Checks of remote nodes wait on the network,
// so the bound is well above the number of cores.
const maxParallelChecks = 32

// maxParallelCancels bounds how many cancelled jobs are wound up at once
// (their nodes' logs kept, the end recorded, the cluster torn down). A
// cancel of thousands of jobs then queues its work behind this bound, not
// in front of the store's write lock and the providers, where the
// decisions of the jobs that go on would wait behind all of it.
const maxParallelCancels = 64

// New returns a controller; nil clock and rand get real ones, a nil
// logger logs nothing.
func New(st *store.Store, cfg config.Config, provs Providers, log *slog.Logger) *Controller {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Controller{
		Store: st, Config: cfg, Providers: provs, Log: log,
		Now:     time.Now,
		Rand:    rand.Float64,
		launch:  make(chan struct{}, cfg.Controller.MaxParallelLaunches),
		cancels: make(chan struct{}, maxParallelCancels),
		wake:    make(chan struct{}, 1),
	}
	if st != nil {
		book := prices.NewBook(st, prices.Intervals{OnDemand: cfg.Prices.OnDemandRefresh.D(), Spot: cfg.Prices.SpotRefresh.D()},
			func() time.Time { return c.Now() })
		c.Prices = book
		c.PriceRefresher = &prices.Refresher{Book: book, Store: st, Now: func() time.Time { return c.Now() }, After: time.After,
			Log: log.With("part", "prices")}
		c.Metrics = metrics.New(st)
		c.Metrics.WatchQuarantine(func(ctx context.Context) ([]strategy.Quarantined, error) {
			return st.Quarantined(ctx, cfg.QuarantinePolicy())
		})
		tx := c.Metrics.StoreTx
		st.ObserveTx(func(d time.Duration) { tx.Observe(d.Seconds()) })
	} else {
		c.Metrics = metrics.New(nil)
	}
	c.sched = schedule.New(schedule.Config{
		Now:      func() time.Time { return c.Now() },
		Checkers: maxParallelChecks,
		Horizon:  cfg.Controller.PollInterval.D(),
		Step:     c.leasedStep,
		Report: func(id int64, err error) {
			c.Log.Error(fmt.Sprintf("reconcile job %d: %v", id, err), "job", id)
		},
	})
	return c
}

// Wake makes the loop run a tick now (a job was submitted or cancelled).
func (c *Controller) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run reconciles until ctx ends, then waits for in-flight work. It spreads
// the work over the poll interval: every job once at start, then each tick
// one shard of the jobs, so that every job is checked once per interval
// but never all at the same instant (see shards). A wake (a job submitted
// or cancelled) reconciles at once the jobs that no attempt is running for.
func (c *Controller) Run(ctx context.Context) error {
	c.sched.Follow(true)
	var claims <-chan time.Time
	if c.lease != nil {
		if err := c.register(ctx); err != nil {
			return fmt.Errorf("register replica %s: %w", c.lease.opts.Name, err)
		}
		// Released once every step has returned (deferred before Wait
		// runs in the loop's return, so it runs after it).
		defer c.release()
		rctx, stopRenew := context.WithCancel(context.WithoutCancel(ctx))
		renewed := make(chan struct{})
		go func() { defer close(renewed); c.renewLoop(rctx) }()
		defer func() { stopRenew(); <-renewed }()
		ct := time.NewTicker(claimEvery(c.lease.opts.TTL))
		defer ct.Stop()
		claims = ct.C
	}
	if err := c.SweepOrphans(ctx); err != nil {
		c.Log.Warn("orphan sweep", "err", err)
	}
	c.removeStaleSecrets(ctx)
	c.sweepLogs(ctx)
	n := c.shards()
	t := time.NewTicker(c.Config.Controller.PollInterval.D() / time.Duration(n))
	defer t.Stop()
	// Teardowns that failed are retried by sweeping now and then, not only
	// when a controller starts.
	sweep := time.NewTicker(c.Config.Controller.SweepInterval.D())
	defer sweep.Stop()
	err := c.Tick(ctx)
	// k is the shard the next shard tick reconciles: it moves on with the
	// shard ticks only, so that no other event (a wake, a sweep, a claim)
	// makes a shard's turn pass without its tick.
	k := 0
	for {
		if err != nil && ctx.Err() == nil {
			c.Log.Error("tick", "err", err)
		}
		select {
		case <-ctx.Done():
			c.sched.Wait()
			return nil
		case <-t.C:
			err = c.tick(ctx, tickScope{shards: n, shard: k})
			if k == 0 {
				// Kept clusters go once per poll interval when their
				// time has come.
				c.releaseKept(ctx)
			}
			k = (k + 1) % n
		case <-c.wake:
			err = c.tick(ctx, tickScope{unwatched: true})
			// A wake may be `jobs release` or a cancel of a kept job.
			c.releaseKept(ctx)
		case <-sweep.C:
			err = c.SweepOrphans(ctx)
			c.sweepLogs(ctx)
		case <-claims:
			// Jobs claimed (new ones, or a dead replica's) are driven at
			// once, not when their shard's turn comes.
			var ids []int64
			if ids, err = c.claim(ctx); err == nil && len(ids) > 0 {
				only := make(map[int64]bool, len(ids))
				for _, id := range ids {
					only[id] = true
				}
				err = c.tick(ctx, tickScope{only: only})
			}
		}
	}
}

// releaseKept is ReleaseKept, its error logged: the next poll interval
// tries again.
func (c *Controller) releaseKept(ctx context.Context) {
	if err := c.ReleaseKept(ctx); err != nil && ctx.Err() == nil {
		c.Log.Warn("release kept clusters", "err", err)
	}
}

// shards is how many ticks one poll interval is spread over: a tick every
// 250ms, at most 20 per interval. A single tick per interval would poll
// every node in the same instant, and the decisions about the attempts it
// found ended would wait behind all of those polls; a shard's polls are a
// fraction of them.
func (c *Controller) shards() int {
	n := int(c.Config.Controller.PollInterval.D() / (250 * time.Millisecond))
	return min(max(n, 1), 20)
}

// tickScope says which jobs a tick reconciles: those whose id is shard
// modulo shards (every job when shards <= 1), and with unwatched only
// those that no attempt is running for, or that are being cancelled.
type tickScope struct {
	shards, shard int
	unwatched     bool
	// only, when set, limits the tick to these jobs (just claimed), of
	// every shard.
	only map[int64]bool
}

// Tick reconciles every job that has not ended, with one status call per
// provider for all running clusters, and returns without waiting for the
// steps it started (Wait does). Jobs whose attempt runs are checked in a
// pool of maxParallelChecks goroutines; every other job (waiting for an
// attempt, launching, starting, being cancelled) steps in a goroutine of
// its own, since a launch can take minutes. A job still held by a step,
// or released since this tick read the store, is left to the next tick.
func (c *Controller) Tick(ctx context.Context) error { return c.tick(ctx, tickScope{}) }

func (c *Controller) tick(ctx context.Context, scope tickScope) error {
	defer metrics.Since(c.Metrics.TickDuration, time.Now())
	epoch := c.sched.Read()
	if scope.shards <= 1 || scope.shard == 0 {
		// Before the jobs are read: a job admitted now starts in this
		// tick.
		c.admit(ctx)
	}
	jobs, open, err := c.readShard(ctx, scope)
	if err != nil {
		return err
	}
	byJob := make(map[int64]*store.Attempt, len(open))
	for _, a := range open {
		if isReplaced(a) {
			continue // the drain's (notice.go); its job has moved on
		}
		byJob[a.JobID] = a
	}
	if scope.shards <= 1 || scope.shard%drainEvery == 0 {
		if err := c.drainAll(ctx); err != nil {
			c.Log.Warn("drain", "err", err)
		}
	}
	var snap snapshot
	if !scope.unwatched {
		snap = c.snapshot(ctx, open)
	} else {
		// A wake looks at the running attempts a notice was given to.
		var noticed []*store.Attempt
		for _, a := range byJob {
			if a.State == lifecycle.AttemptRunning && noticeEnds(a.Notice) && a.ReplacedAt == nil {
				noticed = append(noticed, a)
			}
		}
		snap = c.snapshot(ctx, noticed)
	}
	var watched []schedule.Work
	for _, j := range jobs {
		if j.CancelRequested || j.YieldFor != nil {
			// A launch in flight holds the job: stop it now rather than
			// when it ends, and the cancel (or preemption) follows at once.
			c.aborts.abort(j.ID)
		}
		a := byJob[j.ID]
		running := a != nil && a.State == lifecycle.AttemptRunning && !j.CancelRequested && j.YieldFor == nil
		if scope.unwatched && running && !(noticeEnds(a.Notice) && a.ReplacedAt == nil) {
			// A wake looks at running jobs only when a notice was given
			// to one (sortie local preempt --notice).
			continue
		}
		w := schedule.Work{ID: j.ID, Run: c.leasedRun(j.ID, func(ctx context.Context, s *jobStep) error { return s.reconcile(ctx, j, a, snap) })}
		if running {
			watched = append(watched, w)
			continue
		}
		c.sched.Go(ctx, epoch, w)
	}
	c.sched.Check(ctx, epoch, watched)
	return nil
}

// Wait blocks until every step started by Tick, and every follow-up of
// those, has returned.
func (c *Controller) Wait() {
	c.sched.Wait()
	c.drains.wg.Wait()
}

// snapshot is the providers' view of every open attempt's cluster, taken
// once per tick.
type snapshot struct {
	clusters map[string]*provision.Cluster
	// failed holds clouds whose status call failed this tick: their
	// clusters' state is unknown, which is not the same as gone.
	failed map[string]error
}

func (c *Controller) snapshot(ctx context.Context, open []*store.Attempt) snapshot {
	s := snapshot{clusters: map[string]*provision.Cluster{}, failed: map[string]error{}}
	names := map[string][]string{}
	for _, a := range open {
		if a.State == lifecycle.AttemptStarting || a.State == lifecycle.AttemptRunning {
			names[a.Cloud] = append(names[a.Cloud], a.Cluster)
		}
	}
	for cloud, ns := range names {
		p, err := c.Providers.Provider(ctx, cloud)
		if err == nil {
			var got map[string]*provision.Cluster
			if got, err = safeStatus(ctx, p, ns); err == nil {
				maps.Copy(s.clusters, got)
				continue
			}
		}
		s.failed[cloud] = err
		c.Log.Warn("status", "cloud", cloud, "err", err)
	}
	return s
}

// spec decodes a job's stored pipeline.
// The pipeline is shared with every other step of the job that reads the
// same spec: callers read it and never change it.
func (c *Controller) spec(j *store.Job) (*schema.Pipeline, error) {
	p, err := c.specs.parse(j.ID, j.Spec)
	if err != nil {
		return nil, fmt.Errorf("job %d spec: %w", j.ID, err)
	}
	if j.CurrentTask >= len(p.Tasks) {
		return nil, fmt.Errorf("job %d: current task %d of %d", j.ID, j.CurrentTask, len(p.Tasks))
	}
	return p, nil
}

// specCache keeps the pipelines of the jobs a controller stepped lately,
// each decoded once: a job's spec never changes once stored, and every step
// of the job reads it again. A pipeline is given back only for the same
// text. The zero value is an empty cache.
type specCache struct {
	mu sync.Mutex
	m  map[int64]parsedSpec
}

type parsedSpec struct {
	text []byte
	p    *schema.Pipeline
}

// maxSpecs bounds the pipelines kept; past it the cache starts afresh.
const maxSpecs = 4096

func (c *specCache) parse(id int64, text []byte) (*schema.Pipeline, error) {
	c.mu.Lock()
	got, ok := c.m[id]
	c.mu.Unlock()
	if ok && bytes.Equal(got.text, text) {
		return got.p, nil
	}
	p, err := schema.Unmarshal(text, clouds.Schema())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxSpecs {
		c.m = map[int64]parsedSpec{}
	}
	c.m[id] = parsedSpec{text: bytes.Clone(text), p: p}
	c.mu.Unlock()
	return p, nil
}

func attemptPlacement(a *store.Attempt) schema.Placement {
	return schema.Placement{Cloud: a.Cloud, Region: a.Region, Zone: a.Zone}
}

// safeStatus is p.Status, with a panic in it returned as its error: the
// tick goes on, and the cloud's state is unknown this time.
func safeStatus(ctx context.Context, p provision.Provider, names []string) (got map[string]*provision.Cluster, err error) {
	defer func() {
		if r := recover(); r != nil {
			got, err = nil, fmt.Errorf("status call panicked: %v", r)
		}
	}()
	return p.Status(ctx, names)
}
