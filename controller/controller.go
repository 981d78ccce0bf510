// Package controller is the reconcile loop of managed jobs: one controller
// per SORTIE_HOME reconciles every job that has not ended, launching
// clusters, watching their nodes, applying the strategy's decisions and
// keeping every attempt's logs. The store is the only state; the controller
// can be killed at any moment and picks up where it was when started again.
//
// Where things are: controller.go the loop and its ticks; reconcile.go one
// step of one job; launch.go finding a cluster; start.go starting the task
// on it; observe.go watching a running attempt; end.go ending an attempt
// with the strategy's decision; followup.go and checks.go scheduling;
// sweep.go orphaned clusters; keep.go logs and secrets kept on the
// controller; serve.go the controller process.
package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"sortie/controller/config"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/schema"
)

// Providers returns the provider for a cloud name.
type Providers interface {
	Provider(ctx context.Context, cloud string) (provision.Provider, error)
	// Clouds lists the clouds whose providers are already open, for the
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

	mu   sync.Mutex
	busy map[int64]bool
	// released is when each job was last released, by a count of releases:
	// a tick that read the store before then has a stale view of the job.
	released map[int64]uint64
	releases uint64
	lastRead uint64
	cont     map[int64]time.Time // jobs to go on with before the next tick (followup.go)
	workers  sync.WaitGroup
	launch   chan struct{} // launch slots
	wake     chan struct{}
	// following is set by Run: ended attempts' jobs go on at once.
	following atomic.Bool
	// sleep waits d or until ctx ends (false); nil is a real timer. Tests
	// with a fake clock advance it here.
	sleep func(ctx context.Context, d time.Duration) bool
}

// New returns a controller; nil clock, rand and logger get real ones.
func New(st *store.Store, cfg config.Config, provs Providers, log *slog.Logger) *Controller {
	if log == nil {
		log = slog.Default()
	}
	return &Controller{
		Store: st, Config: cfg, Providers: provs, Log: log,
		Now:      time.Now,
		Rand:     rand.Float64,
		busy:     map[int64]bool{},
		released: map[int64]uint64{},
		cont:     map[int64]time.Time{},
		launch:   make(chan struct{}, cfg.Controller.MaxParallelLaunches),
		wake:     make(chan struct{}, 1),
	}
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
	c.following.Store(true)
	if err := c.SweepOrphans(ctx); err != nil {
		c.Log.Warn("orphan sweep", "err", err)
	}
	c.removeStaleSecrets(ctx)
	n := c.shards()
	t := time.NewTicker(c.Config.Controller.PollInterval.D() / time.Duration(n))
	defer t.Stop()
	// Teardowns that failed are retried by sweeping now and then, not only
	// when a controller starts.
	sweep := time.NewTicker(c.Config.Controller.SweepInterval.D())
	defer sweep.Stop()
	err := c.Tick(ctx)
	for k := 0; ; k = (k + 1) % n {
		if err != nil && ctx.Err() == nil {
			c.Log.Error("tick", "err", err)
		}
		select {
		case <-ctx.Done():
			c.workers.Wait()
			return nil
		case <-t.C:
			err = c.tick(ctx, tickScope{shards: n, shard: k})
		case <-c.wake:
			err = c.tick(ctx, tickScope{unwatched: true})
		case <-sweep.C:
			err = c.SweepOrphans(ctx)
		}
	}
}

// shards is how many ticks one poll interval is spread over: a tick every
// 250ms, at most 20 per interval. With 10,000 jobs a single tick per
// interval polled every node in the same instant, and decisions about the
// attempts it found ended waited behind all of those polls; with 10 ticks,
// a hundred attempts ending together still made the last decision wait
// about 100ms.
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
}

// Tick reconciles every job that has not ended, each in its own goroutine,
// with one status call per provider for all running clusters.
func (c *Controller) Tick(ctx context.Context) error { return c.tick(ctx, tickScope{}) }

func (c *Controller) tick(ctx context.Context, scope tickScope) error {
	epoch := c.readEpoch()
	jobs, err := c.Store.ActiveJobsShard(ctx, scope.shards, scope.shard)
	if err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	open, err := c.Store.OpenAttemptsShard(ctx, scope.shards, scope.shard)
	if err != nil {
		return fmt.Errorf("list attempts: %w", err)
	}
	byJob := make(map[int64]*store.Attempt, len(open))
	for _, a := range open {
		byJob[a.JobID] = a
	}
	var snap snapshot
	if !scope.unwatched {
		snap = c.snapshot(ctx, open)
	}
	var watched []jobAttempt
	for _, j := range jobs {
		a := byJob[j.ID]
		running := a != nil && a.State == store.AttemptRunning && !j.CancelRequested
		if scope.unwatched && running {
			continue
		}
		if !c.claim(j.ID, epoch) {
			continue
		}
		c.workers.Add(1)
		if running {
			watched = append(watched, jobAttempt{j, a})
			continue
		}
		go c.reconcileJob(ctx, j, a, snap)
	}
	c.checkRunning(ctx, watched, snap)
	return nil
}

// Wait blocks until every reconcile started by Tick has returned.
func (c *Controller) Wait() { c.workers.Wait() }

// readEpoch marks a tick's read of the store: a job released after it was
// read has moved on since, and this tick leaves it to the next one.
func (c *Controller) readEpoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Releases older than the previous tick's read can no longer make any
	// read stale: ticks run one after another.
	for id, at := range c.released {
		if at <= c.lastRead {
			delete(c.released, id)
		}
	}
	c.lastRead = c.releases
	return c.releases
}

// claim takes job id for one reconcile, unless another holds it or it was
// released after the caller read it at epoch.
func (c *Controller) claim(id int64, epoch uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[id] || c.released[id] > epoch {
		return false
	}
	c.busy[id] = true
	return true
}

func (c *Controller) release(id int64) {
	c.mu.Lock()
	delete(c.busy, id)
	c.releases++
	c.released[id] = c.releases
	c.mu.Unlock()
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
		if a.State == store.AttemptStarting || a.State == store.AttemptRunning {
			names[a.Cloud] = append(names[a.Cloud], a.Cluster)
		}
	}
	for cloud, ns := range names {
		p, err := c.Providers.Provider(ctx, cloud)
		if err == nil {
			var got map[string]*provision.Cluster
			if got, err = p.Status(ctx, ns); err == nil {
				for k, v := range got {
					s.clusters[k] = v
				}
				continue
			}
		}
		s.failed[cloud] = err
		c.Log.Warn("status", "cloud", cloud, "err", err)
	}
	return s
}

// spec decodes a job's stored pipeline.
func spec(j *store.Job) (*schema.Pipeline, error) {
	p, err := schema.Unmarshal(j.Spec)
	if err != nil {
		return nil, fmt.Errorf("job %d spec: %w", j.ID, err)
	}
	if j.CurrentTask >= len(p.Tasks) {
		return nil, fmt.Errorf("job %d: current task %d of %d", j.ID, j.CurrentTask, len(p.Tasks))
	}
	return p, nil
}

func placementJSON(p schema.Placement) string {
	b, _ := json.Marshal(p)
	return string(b)
}

func attemptPlacement(a *store.Attempt) schema.Placement {
	return schema.Placement{Cloud: a.Cloud, Region: a.Region, Zone: a.Zone}
}
