package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sortie/provision"
)

// saved is the state file's content.
type saved struct {
	Seq      int64               `json:"seq"`
	Capacity map[string]int      `json:"capacity,omitempty"`
	Clusters map[string]*cluster `json:"clusters"`
	// Starts counts the tasks started per job, task, attempt and node
	// (StartKey), clusters torn down included: a crash test's record of
	// what ran.
	Starts map[string]int `json:"starts,omitempty"`
}

// State is what a state file says of the simulated cloud.
type State struct {
	Clusters []string       // the clusters up, by name
	Starts   map[string]int // tasks started, by StartKey
}

// ReadState reads the state file at path, as a test checking what a
// controller left in the cloud reads it.
func ReadState(path string) (State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return State{}, fmt.Errorf("read sim state: %w", err)
	}
	var s saved
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("read sim state %s: %w", path, err)
	}
	return State{Starts: s.Starts, Clusters: slices.Sorted(maps.Keys(s.Clusters))}, nil
}

// stateFile is where an opened provider keeps its state. Only the process
// holding its lock writes it; any other opens it read-only, so two
// processes never overwrite each other's clusters.
type stateFile struct {
	path     string
	lock     *os.File // nil when another process holds the lock
	mu       sync.Mutex
	written  uint64 // generation of the newest write
	gen      uint64 // generation of the newest snapshot; under Provider.mu
	lastSave time.Time
	saving   atomic.Bool    // a background save runs
	inflight sync.WaitGroup // background saves, which Close waits for
}

// Open returns a simulated cloud whose state is kept in the file at path:
// the state saved there is loaded, and changes are saved back at most every
// cfg.SaveEvery. The first process to open path writes it; others only
// read it.
func Open(path string, cfg Config) (*Provider, error) {
	p := New(cfg)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open sim state: %w", err)
	}
	sf := &stateFile{path: path}
	lk, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open sim state: %w", err)
	}
	if err := syscall.Flock(int(lk.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		sf.lock = lk
	} else {
		lk.Close()
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		sf.close()
		return nil, fmt.Errorf("open sim state: %w", err)
	default:
		var s saved
		if err := json.Unmarshal(b, &s); err != nil {
			sf.close()
			return nil, fmt.Errorf("open sim state: %w", &provision.StateError{Path: path, Err: err})
		}
		p.seq = s.Seq
		if s.Capacity != nil {
			p.capacity = s.Capacity
		}
		if s.Starts != nil {
			p.starts = s.Starts
		}
		for name, c := range s.Clusters {
			// One cluster that cannot be read back spoils only itself:
			// its job ends, the others go on.
			if problem := c.invalid(name); problem != "" {
				p.broken[name] = fmt.Sprintf("clusters[%q] %s", name, problem)
				continue
			}
			p.clusters[name] = c
			p.inUse[zoneKey(c.placement())] += len(c.Nodes)
		}
	}
	p.store = sf
	sf.lastSave = p.cfg.Now()
	return p, nil
}

// Close saves what has not been saved and releases the state file.
func (p *Provider) Close() error {
	if p.store != nil {
		p.store.inflight.Wait()
	}
	p.mu.Lock()
	save := p.snapshot()
	p.mu.Unlock()
	err := save()
	if p.store != nil {
		p.store.close()
	}
	if p.shared != nil {
		p.shared.lock.Close()
	}
	return err
}

func (sf *stateFile) close() {
	if sf.lock != nil {
		sf.lock.Close()
		sf.lock = nil
	}
}

// saveDue returns a function that saves the state when it changed and the
// last save is SaveEvery old; p.mu is held, the function is called after
// releasing it. With SaveEvery above zero the function only starts the save
// in the background, one at a time: encoding a large cloud's clusters is
// slow, and no call into the cloud should wait for it.
func (p *Provider) saveDue(now time.Time) func() error {
	sf := p.store
	if sf == nil || sf.lock == nil || !p.dirty || now.Sub(sf.lastSave) < p.cfg.SaveEvery {
		return func() error { return nil }
	}
	if p.cfg.SaveEvery <= 0 {
		return p.snapshot()
	}
	if !sf.saving.CompareAndSwap(false, true) {
		return func() error { return nil } // the next call saves what this one changed
	}
	save := p.snapshot()
	sf.inflight.Add(1)
	return func() error {
		go func() {
			defer sf.inflight.Done()
			defer sf.saving.Store(false)
			p.logSave(save())
		}()
		return nil
	}
}

// snapshot copies the state under p.mu and returns the function that
// encodes and writes the copy.
func (p *Provider) snapshot() func() error {
	sf := p.store
	if sf == nil || sf.lock == nil || !p.dirty {
		return func() error { return nil }
	}
	st := saved{Seq: p.seq, Capacity: maps.Clone(p.capacity), Starts: maps.Clone(p.starts), Clusters: make(map[string]*cluster, len(p.clusters))}
	for name, c := range p.clusters {
		st.Clusters[name] = c.clone()
	}
	p.dirty = false
	sf.gen++
	gen := sf.gen
	sf.lastSave = p.cfg.Now()
	return func() error {
		b, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("save sim state: %w", err)
		}
		return sf.write(gen, b)
	}
}

// clone is a deep copy of c, for saving it outside the provider's lock.
func (c *cluster) clone() *cluster {
	out := *c
	out.Tags = maps.Clone(c.Tags)
	out.Nodes = make([]*hollowNode, len(c.Nodes))
	for i, n := range c.Nodes {
		cn := *n
		if n.Tasks != nil {
			cn.Tasks = make(map[string]*task, len(n.Tasks))
			for k, t := range n.Tasks {
				ct := *t
				cn.Tasks[k] = &ct
			}
		}
		out.Nodes[i] = &cn
	}
	return &out
}

// write replaces the file with b unless a newer snapshot was written.
func (sf *stateFile) write(gen uint64, b []byte) error {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if gen <= sf.written {
		return nil
	}
	tmp := sf.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("save sim state: %w", err)
	}
	if err := os.Rename(tmp, sf.path); err != nil {
		return fmt.Errorf("save sim state: %w", err)
	}
	sf.written = gen
	return nil
}

// logSave logs a failed save: the calls that trigger saves answer about the
// cloud, which a full disk on the controller has not changed.
func (p *Provider) logSave(err error) {
	if err != nil {
		p.cfg.Log.Warn("sim state not saved; a restarted controller may find older clusters", "err", err)
	}
}

// invalid says what makes a cluster read back from the state file unusable
// ("" when nothing does): whatever the file holds, no call may panic on it
// or report an exit code that is none.
func (c *cluster) invalid(name string) string {
	if c == nil {
		return "is null"
	}
	if c.Name != name {
		return fmt.Sprintf("is named %q", c.Name)
	}
	for i, n := range c.Nodes {
		if n == nil {
			return fmt.Sprintf("nodes[%d] is null", i)
		}
		for dir, t := range n.Tasks {
			if t == nil {
				return fmt.Sprintf("nodes[%d].tasks[%q] is null", i, dir)
			}
			if t.Code < 0 || t.Code > 255 {
				return fmt.Sprintf("nodes[%d].tasks[%q].code %d is not an exit code (0-255)", i, dir, t.Code)
			}
		}
	}
	if (c.PreemptAt != nil || c.PreemptFrac > 0) && (c.PreemptRank < 0 || c.PreemptRank >= len(c.Nodes)) {
		return fmt.Sprintf("preempt_rank %d is not a node of its %d", c.PreemptRank, len(c.Nodes))
	}
	return ""
}

// statePath is the state file's path; "" for a cloud held in memory only.
func (p *Provider) statePath() string {
	if p.store == nil {
		return ""
	}
	return p.store.path
}
