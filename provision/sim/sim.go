// Package sim is a cloud of hollow nodes, as Kubernetes' kubemark is a
// cluster of hollow kubelets: clusters, nodes and tasks that are records in
// memory, no processes. Boot delay, task run time, exit codes per attempt,
// spot preemptions and capacity per zone come from Config, and every random
// choice is a hash of Config.Seed and a name, so a run is reproducible.
//
// The controller cannot tell it from a cloud: Status is one batched call,
// and its runners answer the very scripts of package node (Start, Poll,
// ReadLog, Stop, Upload), read back with node.Decode, instead of running
// them. It is for scale and chaos tests of the controller.
//
// Its state lives in the process that opened it, normally the controller
// daemon. With a state file (Open) it is also saved there, at most every
// Config.SaveEvery, so that a controller killed and started again finds the
// clusters it launched, as it would on a real cloud.
//
// It must not import sortie/controller/...: a provider knows nothing of jobs.
package sim

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"sortie/provision"
	"sortie/schema"
)

// CloudName is the provider's name in resources.cloud.
const CloudName = "sim"

// PreemptReason is the Reason of a preempted hollow node.
const PreemptReason = "sim spot interruption"

// Region is one region of the simulated cloud.
type Region struct {
	Name  string
	Zones []string
}

// DefaultRegions are two regions, one with two zones and one with one, so
// that zone and region failover have somewhere to go.
func DefaultRegions() []Region {
	return []Region{
		{Name: "sim-east", Zones: []string{"sim-east-a", "sim-east-b"}},
		{Name: "sim-west", Zones: []string{"sim-west-a"}},
	}
}

// ExitRule makes a share of jobs' tasks exit with Code on one attempt.
type ExitRule struct {
	Code int
	// Share is the fraction of (job, task) pairs the rule picks, in [0, 1].
	Share float64
	// Attempt is the attempt (1-based) on which a picked task exits with
	// Code; zero means every attempt.
	Attempt int
}

// Config shapes the simulated cloud. Zero values mean: DefaultRegions, no
// boot delay, tasks that end at once, every task exits 0, no preemption,
// unlimited capacity, the real clock.
type Config struct {
	Regions []Region
	// BootDelay is how long Launch takes before the nodes run.
	BootDelay time.Duration
	// RunTime is how long every task runs once started.
	RunTime time.Duration
	// ExitCodes are checked in order; the first rule that picks a task gives
	// its exit code, else it exits 0.
	ExitCodes []ExitRule
	// PreemptRate is the fraction of clusters whose node is taken away as
	// by a spot interruption while their first task runs, at a point
	// between 10% and 60% of RunTime.
	PreemptRate float64
	// PreemptAttempts limits preemption to the clusters of attempts up to
	// this number: 1 preempts a task at most once. Zero means any attempt.
	PreemptAttempts int
	// CapacityPerZone is how many nodes a zone holds; a launch beyond it is
	// a capacity error. Zero means unlimited.
	CapacityPerZone int
	// LoseNodesIn are zones whose hosts fail: a cluster launched in one
	// of them loses its first node (gone, LostReason) once a task
	// has started on it.
	LoseNodesIn []string
	// Seed makes every random choice (exit codes, preemptions) differ from
	// one run to another, and repeat for the same seed.
	Seed uint64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends (Launch's boot delay); nil means a
	// real timer. Tests with a fake clock advance it here.
	Sleep func(ctx context.Context, d time.Duration) error
	// SaveEvery bounds how often an opened provider rewrites its state
	// file: a change is saved, in the background, at the first call at
	// least SaveEvery after the last save. Zero saves every change before
	// the call that made it returns.
	SaveEvery time.Duration
	// DecisionLog, when set, is a file to which the provider appends one
	// line per task that goes on after an attempt ended: when the
	// controller was first told of the end (an exit code in a Poll, a
	// preempted node in a Status) and when it asked for the next attempt
	// (a Launch or a Start). See decisions.go.
	DecisionLog string
	// Log receives what the provider cannot return (a failed save of the
	// state file); nil logs nothing.
	Log *slog.Logger
}

// Provider is the simulated cloud. It is safe for concurrent use.
type Provider struct {
	cfg Config

	mu        sync.Mutex
	clusters  map[string]*cluster
	broken    map[string]string // clusters of the state file that could not be read back, and why
	inUse     map[string]int    // nodes per region/zone
	capacity  map[string]int    // SetCapacity overrides per region/zone
	seq       int64             // instance ids
	seen      map[taskKey]seenEnd
	starts    map[string]int // StartKey -> tasks started, kept after teardown
	dirty     bool
	store     *stateFile // nil: memory only
	shared    *sharedDir // nil: not shared with other processes
	decisions *decisionLog
}

var _ provision.Provider = (*Provider)(nil)

// New returns a simulated cloud held in memory only.
func New(cfg Config) *Provider {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if len(cfg.Regions) == 0 {
		cfg.Regions = DefaultRegions()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	p := &Provider{cfg: cfg, clusters: map[string]*cluster{}, broken: map[string]string{}, inUse: map[string]int{}, capacity: map[string]int{}, seen: map[taskKey]seenEnd{}, starts: map[string]int{}}
	if cfg.DecisionLog != "" {
		p.decisions = &decisionLog{path: cfg.DecisionLog}
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Name is "sim".
func (p *Provider) Name() string { return CloudName }

// logger is the logger of a call about one cluster made under ctx: the
// step's it is made for, when ctx carries one (provision.Logger), else
// the provider's own.
func (p *Provider) logger(ctx context.Context) *slog.Logger {
	return provision.Logger(ctx, p.cfg.Log, CloudName)
}

// Placements lists every configured zone that r's region and zone allow,
// in config order.
func (p *Provider) Placements(ctx context.Context, r schema.Resources) ([]schema.Placement, error) {
	if r.Cloud != "" && r.Cloud != CloudName {
		return nil, provision.Prechecks(fmt.Errorf("resources.cloud %q: the sim provider serves only %q", r.Cloud, CloudName))
	}
	var out []schema.Placement
	for _, reg := range p.cfg.Regions {
		if r.Region != "" && reg.Name != r.Region {
			continue
		}
		if len(reg.Zones) == 0 && r.Zone == "" {
			out = append(out, schema.Placement{Cloud: CloudName, Region: reg.Name})
		}
		for _, z := range reg.Zones {
			if r.Zone == "" || z == r.Zone {
				out = append(out, schema.Placement{Cloud: CloudName, Region: reg.Name, Zone: z})
			}
		}
	}
	if len(out) == 0 {
		return nil, provision.Prechecks(fmt.Errorf("resources region %q zone %q: not offered by the sim provider; offered: %s (set sim.regions in config.yaml)",
			r.Region, r.Zone, p.offered()))
	}
	return out, nil
}

func (p *Provider) offers(at schema.Placement) bool {
	for _, reg := range p.cfg.Regions {
		if reg.Name != at.Region {
			continue
		}
		if at.Zone == "" {
			return len(reg.Zones) == 0
		}
		if slices.Contains(reg.Zones, at.Zone) {
			return true
		}
	}
	return false
}

func (p *Provider) offered() string {
	var s []string
	for _, reg := range p.cfg.Regions {
		if len(reg.Zones) == 0 {
			s = append(s, reg.Name)
		}
		for _, z := range reg.Zones {
			s = append(s, reg.Name+"/"+z)
		}
	}
	return strings.Join(s, ", ")
}

func zoneKey(at schema.Placement) string { return at.Region + "/" + at.Zone }

// SetCapacity sets how many nodes placement at holds, overriding
// CapacityPerZone; a negative n goes back to CapacityPerZone.
func (p *Provider) SetCapacity(at schema.Placement, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n < 0 {
		delete(p.capacity, zoneKey(at))
		return
	}
	p.capacity[zoneKey(at)] = n
}

// limit is the node capacity of zone key k, or -1 for unlimited.
func (p *Provider) limit(k string) int {
	if n, ok := p.capacity[k]; ok {
		return n
	}
	if p.cfg.CapacityPerZone > 0 {
		return p.cfg.CapacityPerZone
	}
	return -1
}

// ExitCode is the exit code the task of job with index task has on attempt
// (1-based), as the rules of cfg decide it.
func (cfg Config) ExitCode(job int64, task, attempt int) int {
	for i, r := range cfg.ExitCodes {
		if r.Attempt != 0 && r.Attempt != attempt {
			continue
		}
		if frac(cfg.Seed, "exit", fmt.Sprint(i), fmt.Sprint(job), fmt.Sprint(task)) < r.Share {
			return r.Code
		}
	}
	return 0
}

// Preempts says whether a cluster of that name, launched for attempt
// (1-based), has a node preempted while its first task runs.
func (cfg Config) Preempts(cluster string, attempt int) bool {
	if cfg.PreemptRate <= 0 || (cfg.PreemptAttempts > 0 && attempt > cfg.PreemptAttempts) {
		return false
	}
	return frac(cfg.Seed, "preempt", cluster) < cfg.PreemptRate
}

// frac hashes the seed and parts to a number in [0, 1). SHA-256, because
// the choices must be independent for names that differ in one digit.
func frac(seed uint64, parts ...string) float64 {
	h := sha256.New()
	fmt.Fprintf(h, "%d", seed)
	for _, s := range parts {
		h.Write([]byte{0})
		h.Write([]byte(s))
	}
	return float64(binary.BigEndian.Uint64(h.Sum(nil))>>11) / (1 << 53)
}
