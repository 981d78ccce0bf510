package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// A shared cloud is one that several processes (replicas of the
// controller) use at once, as machines share a real cloud: each cluster is
// a file of its own in a directory, and every call reads the clusters it
// touches from their files and writes back those it changed, all under a
// lock of the directory (an flock, released however the process dies).
// The lock is held for the files of one call, never for a boot delay.
// Starts are appended to a log, one line each, so that a test can count
// them across processes. Capacity per zone needs a count of every
// cluster, which a shared cloud does not keep: it is refused.

// sharedDir is where a shared cloud keeps its clusters.
type sharedDir struct {
	dir  string
	lock *os.File
}

// OpenShared returns a simulated cloud whose clusters are kept in dir,
// shared with every other process that opens dir.
func OpenShared(dir string, cfg Config) (*Provider, error) {
	if cfg.CapacityPerZone > 0 {
		return nil, fmt.Errorf("sim.capacity_per_zone %d: a sim shared by replicas keeps no count of nodes per zone; leave it out", cfg.CapacityPerZone)
	}
	if err := os.MkdirAll(filepath.Join(dir, "clusters"), 0o700); err != nil {
		return nil, fmt.Errorf("open shared sim: %w", err)
	}
	lk, err := os.OpenFile(filepath.Join(dir, "shared.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open shared sim: %w", err)
	}
	p := New(cfg)
	p.shared = &sharedDir{dir: dir, lock: lk}
	return p, nil
}

func (d *sharedDir) clusterPath(name string) string {
	return filepath.Join(d.dir, "clusters", name+".json")
}

func (d *sharedDir) startsPath() string { return filepath.Join(d.dir, "starts.log") }

// syncIn takes the directory's lock and reads the named clusters from
// their files, forgetting those that have none; p.mu is held. A shared
// cloud's other calls see only what syncIn read.
func (p *Provider) syncIn(names ...string) {
	d := p.shared
	if d == nil {
		return
	}
	if err := syscall.Flock(int(d.lock.Fd()), syscall.LOCK_EX); err != nil {
		p.cfg.Log.Warn("sim: lock the shared clusters", "err", err)
	}
	for _, name := range names {
		p.load(name)
	}
	p.dirty = false
}

// load reads cluster name from its file; p.mu and the lock are held.
func (p *Provider) load(name string) {
	path := p.shared.clusterPath(name)
	b, err := os.ReadFile(path)
	delete(p.broken, name)
	if errors.Is(err, fs.ErrNotExist) {
		delete(p.clusters, name)
		return
	}
	var c *cluster
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err == nil {
		if problem := c.invalid(name); problem != "" {
			err = errors.New(problem)
		}
	}
	if err != nil {
		delete(p.clusters, name)
		p.broken[name] = fmt.Sprintf("%s: %v", path, err)
		return
	}
	p.clusters[name] = c
}

// syncOut writes back the named clusters when the call changed anything
// (removing the files of those gone), then releases the lock; p.mu is
// held.
func (p *Provider) syncOut(names ...string) {
	d := p.shared
	if d == nil {
		return
	}
	defer func() {
		if err := syscall.Flock(int(d.lock.Fd()), syscall.LOCK_UN); err != nil {
			p.cfg.Log.Warn("sim: unlock the shared clusters", "err", err)
		}
	}()
	if !p.dirty {
		return
	}
	p.dirty = false
	for _, name := range names {
		if err := p.write(name); err != nil {
			p.cfg.Log.Warn("sim: cluster not saved; the other replicas see it as it was", "cluster", name, "err", err)
		}
	}
}

func (p *Provider) write(name string) error {
	path := p.shared.clusterPath(name)
	c := p.clusters[name]
	if c == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// syncAll reads every cluster of the shared directory; p.mu is held, and
// the lock is taken and released.
func (p *Provider) syncAll() {
	entries, _ := os.ReadDir(filepath.Join(p.shared.dir, "clusters"))
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, n)
		}
	}
	for name := range p.clusters {
		names = append(names, name) // those gone are forgotten
	}
	p.syncIn(names...)
	p.syncOut()
}

// countStart appends a start to the shared log; p.mu and the lock are
// held.
func (p *Provider) countStart(key string) {
	if p.shared == nil {
		return
	}
	f, err := os.OpenFile(p.shared.startsPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		_, err = f.WriteString(key + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		p.cfg.Log.Warn("sim: start not counted", "start", key, "err", err)
	}
}

// instanceID names node rank of cluster name: from the cluster's name in a
// shared cloud, where no count of instances is shared, else from the
// process's count.
func (p *Provider) instanceID(name string, rank int) (id, ip string) {
	if p.shared == nil {
		p.seq++
		return fmt.Sprintf("sim-%08x", p.seq), fmt.Sprintf("10.%d.%d.%d", (p.seq>>16)&255, (p.seq>>8)&255, p.seq&255)
	}
	n := uint64(frac(p.cfg.Seed, "instance", name, fmt.Sprint(rank)) * (1 << 32))
	return fmt.Sprintf("sim-%08x", n), fmt.Sprintf("10.%d.%d.%d", (n>>16)&255, (n>>8)&255, n&255)
}

// ReadShared reads what a shared cloud's directory says: the clusters up
// and the starts counted.
func ReadShared(dir string) (State, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "clusters"))
	if err != nil {
		return State{}, fmt.Errorf("read shared sim: %w", err)
	}
	var st State
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			st.Clusters = append(st.Clusters, n)
		}
	}
	sort.Strings(st.Clusters)
	st.Starts = map[string]int{}
	f, err := os.Open(filepath.Join(dir, "starts.log"))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read shared sim: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k := strings.TrimSpace(sc.Text()); k != "" {
			st.Starts[k]++
		}
	}
	return st, sc.Err()
}
