package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sortie/provision"
	"sortie/schema"
)

// Layout under Home/local:
//
//	lock                         flock held around every read-modify-write
//	seq                          the last instance number handed out
//	capacity.json                placements whose capacity is off
//	clusters/<name>/cluster.json the cluster's record
//	clusters/<name>/node-<rank>/ each node's directory (its Runner's Dir)

// record is a cluster's cluster.json.
type record struct {
	Name      string            `json:"name"`
	Placement schema.Placement  `json:"placement"`
	Tags      map[string]string `json:"tags"`
	Nodes     []nodeRecord      `json:"nodes"`
}

type nodeRecord struct {
	Rank       int                 `json:"rank"`
	InstanceID string              `json:"instance_id"`
	State      provision.NodeState `json:"state"`
	Reason     string              `json:"reason,omitempty"`
	// PreemptAt is when a node under a notice (PreemptAt) is taken away.
	PreemptAt *time.Time `json:"preempt_at,omitempty"`
}

func root(home string) string                  { return filepath.Join(home, "local") }
func (p *Provider) clustersDir() string        { return filepath.Join(root(p.home), "clusters") }
func (p *Provider) clusterDir(n string) string { return filepath.Join(p.clustersDir(), n) }

func (p *Provider) nodeDir(name string, rank int) string {
	return filepath.Join(p.clusterDir(name), "node-"+strconv.Itoa(rank))
}

func (p *Provider) check() error {
	if p.home == "" {
		return provision.Prechecks(errors.New("local provider: Config.Home is empty; set SORTIE_HOME"))
	}
	return nil
}

// checkName keeps a cluster name to one plain directory name.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") || len(name) > 200 {
		return provision.Prechecks(fmt.Errorf("cluster name %q: want a plain name such as sortie-12-0-1", name))
	}
	return nil
}

// lock takes the exclusive lock on home's state. Locks are per open file, so
// it also excludes other goroutines of this process.
func lock(home string) (unlock func(), err error) {
	if err := os.MkdirAll(root(home), 0o700); err != nil {
		return nil, fmt.Errorf("lock local state: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(root(home), "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock local state: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// writeAtomic replaces path with data: readers see the old file or the new,
// never a part, and the new one survives a crash.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	if err := writeSynced(f, data); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// writeSynced writes data to f, syncs and closes it.
func writeSynced(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeRecord writes rec as the record of the cluster built in dir, a
// file that must not exist yet: the build directory is nobody's until its
// rename.
func writeRecord(dir string, rec *record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, recordFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'))
}

// read loads a cluster's record; fs.ErrNotExist when there is none.
func (p *Provider) read(name string) (*record, error) {
	path := filepath.Join(p.clusterDir(name), recordFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if rec, ok := p.recs.get(name, b); ok {
		return rec, nil
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, &provision.StateError{Path: path, Err: err}
	}
	if problem := rec.invalid(name); problem != "" {
		return nil, &provision.StateError{Path: path, Err: errors.New(problem)}
	}
	p.recs.put(name, b, &rec)
	return &rec, nil
}

// recordCache keeps the record last read of each cluster with the bytes it
// was parsed from: the same bytes read again are the same record, and
// need no parse.
type recordCache struct {
	mu sync.Mutex
	m  map[string]cachedRecord
}

type cachedRecord struct {
	data []byte
	rec  *record
}

// maxCachedRecords bounds the cache: past it, it starts again empty.
const maxCachedRecords = 4096

// get returns a copy of the record cached for name if it was parsed from
// data.
func (c *recordCache) get(name string, data []byte) (*record, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	e, ok := c.m[name]
	c.mu.Unlock()
	if !ok || !bytes.Equal(e.data, data) {
		return nil, false
	}
	return e.rec.clone(), true
}

func (c *recordCache) put(name string, data []byte, rec *record) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedRecords {
		c.m = map[string]cachedRecord{}
	}
	c.m[name] = cachedRecord{data: data, rec: rec.clone()}
}

func (c *recordCache) forget(name string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.m, name)
	c.mu.Unlock()
}

// clone is a deep copy of rec.
func (rec *record) clone() *record {
	out := *rec
	out.Tags = make(map[string]string, len(rec.Tags))
	maps.Copy(out.Tags, rec.Tags)
	out.Nodes = make([]nodeRecord, len(rec.Nodes))
	copy(out.Nodes, rec.Nodes)
	for i, n := range out.Nodes {
		if n.PreemptAt != nil {
			t := *n.PreemptAt
			out.Nodes[i].PreemptAt = &t
		}
	}
	return &out
}

// invalid says what makes a record read back unusable; "" when nothing does.
func (rec *record) invalid(name string) string {
	if rec.Name != name {
		return fmt.Sprintf("name %q is not the cluster's own, %q", rec.Name, name)
	}
	for i, n := range rec.Nodes {
		if n.Rank != i {
			return fmt.Sprintf("nodes[%d].rank is %d", i, n.Rank)
		}
		switch n.State {
		case provision.NodePending, provision.NodeRunning, provision.NodePreempted, provision.NodeStopped, provision.NodeGone, provision.NodeTerminated:
		default:
			return fmt.Sprintf("nodes[%d].state %q is not a node state", i, n.State)
		}
	}
	return ""
}

func (p *Provider) write(rec *record) error {
	return writeJSON(filepath.Join(p.clusterDir(rec.Name), "cluster.json"), rec)
}

// idBlock is the instance numbers a provider has reserved in the seq file
// and not yet handed out: numbers next to limit. Reserving a block at a
// time keeps the seq file's synced write, under the lock, off most launches.
type idBlock struct {
	mu          sync.Mutex
	next, limit int
}

// idsPerBlock is how many instance numbers one write of the seq file
// reserves. Numbers reserved by a provider that ends unused are skipped.
const idsPerBlock = 64

// nextIDs hands out n instance ids, never the same twice for one Home,
// from this provider's reserved block; it takes the lock to reserve more.
func (p *Provider) nextIDs(n int) ([]string, error) {
	b := p.ids
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit-b.next+1 < n {
		last, err := p.reserveIDs(max(n, idsPerBlock))
		if err != nil {
			return nil, err
		}
		b.next, b.limit = last-max(n, idsPerBlock)+1, last
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("local-%06d", b.next)
		b.next++
	}
	return ids, nil
}

// reserveIDs adds n to the seq file, under the lock, and returns its new
// value: the numbers from the old value + 1 to it are the caller's.
func (p *Provider) reserveIDs(n int) (int, error) {
	unlock, err := lock(p.home)
	if err != nil {
		return 0, err
	}
	defer unlock()
	path := filepath.Join(root(p.home), "seq")
	last := 0
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if last, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return 0, fmt.Errorf("read %s: %w; remove it to restart numbering", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	last += n
	if err := writeAtomic(path, []byte(strconv.Itoa(last)+"\n")); err != nil {
		return 0, err
	}
	return last, nil
}

// view is the cluster as Status reports it: a node whose directory is gone
// (removed behind sortie's back) is NodeGone.
func view(rec *record, present map[string]bool) *provision.Cluster {
	c := &provision.Cluster{Name: rec.Name, Placement: rec.Placement, Tags: map[string]string{}}
	maps.Copy(c.Tags, rec.Tags)
	for _, n := range rec.Nodes {
		node := provision.Node{Rank: n.Rank, InstanceID: n.InstanceID, IP: "127.0.0.1", State: n.State, Reason: n.Reason}
		if !present["node-"+strconv.Itoa(n.Rank)] {
			node.State, node.Reason = provision.NodeGone, "node directory removed"
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c
}

// lookNodesUpTo is how many nodes a cluster may have for load to look at
// each one's directory rather than read the cluster's.
const lookNodesUpTo = 8

// load reads a cluster's record and which node directories exist.
func (p *Provider) load(name string) (*provision.Cluster, *record, error) {
	rec, err := p.read(name)
	if err != nil {
		return nil, nil, err
	}
	present := map[string]bool{}
	if len(rec.Nodes) <= lookNodesUpTo {
		// A look at each node's directory costs less than a read of
		// the whole cluster directory.
		for _, n := range rec.Nodes {
			d := "node-" + strconv.Itoa(n.Rank)
			if fi, err := os.Lstat(filepath.Join(p.clusterDir(name), d)); err == nil && fi.IsDir() {
				present[d] = true
			}
		}
		return view(rec, present), rec, nil
	}
	entries, err := os.ReadDir(p.clusterDir(name))
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if e.IsDir() {
			present[e.Name()] = true
		}
	}
	return view(rec, present), rec, nil
}
