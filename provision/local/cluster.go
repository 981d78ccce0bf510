package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"sortie/provision"
	"sortie/schema"
)

// PreemptReason is the Reason of a node taken away by Preempt.
const PreemptReason = "local spot interruption"

// Launch creates the cluster's record and node directories in one rename, so
// that a crash leaves either the whole cluster or nothing. A cluster of the
// same name is returned as it is.
func (p *Provider) Launch(ctx context.Context, spec provision.ClusterSpec) (*provision.Cluster, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := checkName(spec.Name); err != nil {
		return nil, err
	}
	// Ports, disk and network tiers and labels ask a cloud for what this
	// machine already is (its ports are open to itself, its disk and
	// network are what they are, it has no tags): accepted and ignored.
	n := spec.NumNodes
	if n == 0 {
		n = 1
	}
	if n < 0 {
		return nil, provision.Prechecks(fmt.Errorf("launch %s: num_nodes %d is negative; use 1 or more", spec.Name, n))
	}
	at := spec.Placement
	if at.Cloud == "" {
		at.Cloud = CloudName
	}
	if at.Cloud != CloudName || !p.offers(at) {
		return nil, provision.Prechecks(fmt.Errorf("launch %s: placement %s is not offered by the local provider; offered: %s", spec.Name, at, p.offered()))
	}

	// A cluster of this name is returned as it is; the look before the lock
	// spares the build below when it is already there.
	if c, _, err := p.load(spec.Name); err == nil {
		return c, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	ids, err := p.nextIDs(n)
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	rec := &record{Name: spec.Name, Placement: at, Tags: map[string]string{}}
	maps.Copy(rec.Tags, spec.Tags)
	for i, id := range ids {
		rec.Nodes = append(rec.Nodes, nodeRecord{Rank: i, InstanceID: id, State: provision.NodeRunning})
	}
	// The cluster is built, record written, in a directory of
	// its own outside the lock; the lock is held only to look again and
	// rename it into place, so launches at once wait on each other for a
	// rename, not for each other's writes.
	tmp, crowded, err := p.build(rec)
	if err != nil {
		// A launch of the same name elsewhere may have won and cleared
		// this build away.
		if c, _, lerr := p.load(spec.Name); lerr == nil {
			return c, nil
		}
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed; else the build not used
	unlock, err := lock(p.home)
	if err != nil {
		return nil, err
	}
	c, _, err := p.load(spec.Name)
	if err == nil {
		unlock()
		return c, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		unlock()
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	off, err := Capacity(p.home)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	if o, ok := blocked(off, at); ok {
		unlock()
		return nil, provision.Capacity(fmt.Errorf("launch %s in %s: no capacity (turned off for %s; `sortie local capacity %s on` turns it back on)",
			spec.Name, at, o, capacityArg(o)))
	}
	err = os.Rename(tmp, p.clusterDir(rec.Name))
	if err == nil && crowded {
		p.clearBuilds(rec.Name)
	}
	unlock()
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", spec.Name, err)
	}
	// The cluster in place is the one just built, every node directory
	// with it: reading it back would tell nothing new.
	built := map[string]bool{}
	for _, n := range rec.Nodes {
		built["node-"+strconv.Itoa(n.Rank)] = true
	}
	return view(rec, built), nil
}

// build makes rec's cluster, its record and node directories, in a new
// hidden directory of the clusters directory and returns its path: Launch
// renames it into place, so that a crash leaves the whole cluster or none.
// A build left by a crash is hidden from List, never mistaken for a
// cluster, and removed once a Launch of its cluster has put one in place.
//
// The build is ".new-NAME"; only when that is taken (a crash left it, or
// a launch of the same name elsewhere builds there) is it ".new-NAME.*",
// and crowded says so: then, and only then, the launch that wins looks
// for builds to clear, which spares every other launch a scan of the
// clusters directory.
func (p *Provider) build(rec *record) (tmp string, crowded bool, err error) {
	tmp = filepath.Join(p.clustersDir(), ".new-"+rec.Name)
	err = os.Mkdir(tmp, 0o700)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(p.clustersDir(), 0o700); err == nil {
			err = os.Mkdir(tmp, 0o700)
		}
	}
	if errors.Is(err, fs.ErrExist) {
		crowded = true
		tmp, err = os.MkdirTemp(p.clustersDir(), ".new-"+rec.Name+".")
	}
	if err != nil {
		return "", crowded, err
	}
	for _, n := range rec.Nodes {
		dir := filepath.Join(tmp, "node-"+strconv.Itoa(n.Rank))
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			err = linkPrograms(p.home, dir)
		}
		if err != nil {
			os.RemoveAll(tmp)
			return "", crowded, err
		}
	}
	// The record is written in place: the build directory is nobody's
	// until its rename, which makes the record appear whole. It is not
	// synced: what would lose it (the machine going down) ends every
	// local node with it, and a record cut short reads as broken, which
	// ends its job and terminates the cluster.
	if err := writeRecord(tmp, rec); err != nil {
		os.RemoveAll(tmp)
		return "", crowded, err
	}
	return tmp, crowded, nil
}

// clearBuilds removes what launches of cluster name left unfinished (a
// crash between build and rename). The caller holds the lock, and the
// cluster is in place: a build still under way elsewhere would lose to it.
func (p *Provider) clearBuilds(name string) {
	stale, _ := filepath.Glob(filepath.Join(p.clustersDir(), ".new-"+name+".*"))
	for _, d := range append(stale, filepath.Join(p.clustersDir(), ".new-"+name)) {
		os.RemoveAll(d)
	}
}

// Status reads the named clusters after one scan of the clusters directory.
func (p *Provider) Status(ctx context.Context, names []string) (map[string]*provision.Cluster, error) {
	out := map[string]*provision.Cluster{}
	if len(names) == 0 {
		return out, nil
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	// A few clusters are read straight from their directories; many
	// after one scan, which spares a failed open for each one gone.
	var present map[string]bool
	if len(names) > statusScanFrom {
		var err error
		if present, err = p.clusterNames(); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		if present != nil && !present[name] || checkName(name) != nil {
			continue // no such cluster, or a name no cluster can have
		}
		c, rec, err := p.load(name)
		if err == nil && p.preemptDue(ctx, rec) {
			c, _, err = p.load(name)
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue // terminated since the scan
		}
		if se := (*provision.StateError)(nil); errors.As(err, &se) {
			// Only this cluster's job is stuck; the others' answer stands.
			out[name] = &provision.Cluster{Name: name, Placement: schema.Placement{Cloud: CloudName}, Broken: se.Error()}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of %s: %w", name, err)
		}
		out[name] = c
	}
	return out, nil
}

// statusScanFrom is how many names a Status call asks about from which it
// scans the clusters directory first.
const statusScanFrom = 4

// clusterNames scans the clusters directory, leaving out clusters being built.
func (p *Provider) clusterNames() (map[string]bool, error) {
	entries, err := os.ReadDir(p.clustersDir())
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scan local clusters: %w", err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names[e.Name()] = true
		}
	}
	return names, nil
}

// List returns every cluster tagged as sortie's, by name.
func (p *Provider) List(ctx context.Context) ([]*provision.Cluster, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	names, err := p.clusterNames()
	if err != nil {
		return nil, err
	}
	var out []*provision.Cluster
	for name := range names {
		c, _, err := p.load(name)
		if se := (*provision.StateError)(nil); errors.Is(err, fs.ErrNotExist) || errors.As(err, &se) {
			// A record that cannot be read says nothing of its tags; the
			// job that owns it ends, and its end terminates it.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list local clusters: %w", err)
		}
		if c.Tags[provision.TagManaged] == "true" {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Terminate kills every process of every node (SIGTERM, then SIGKILL), then
// removes the cluster's directory. The processes die before the record goes,
// so a crash in between leaves a cluster that List still finds.
func (p *Provider) Terminate(ctx context.Context, name string) error {
	if err := p.check(); err != nil {
		return err
	}
	if err := checkName(name); err != nil {
		return err
	}
	dir := p.clusterDir(name)
	// One read of the directory says whether the cluster is there, which
	// node directories it has (whatever its record says), and what to
	// remove.
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("terminate %s: %w", name, err)
	}
	var nodes []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "node-") {
			nodes = append(nodes, filepath.Join(dir, e.Name()))
		}
	}
	if err := killNodes(ctx, nodes, p.grace); err != nil {
		return fmt.Errorf("terminate %s: %w", name, err)
	}
	// The record goes last: a controller killed halfway leaves a cluster
	// that List still finds, so the orphan sweep finishes the teardown. The
	// node directories are the cluster's alone once its processes are
	// gone, so only the record's removal takes the lock (a launch of the
	// same name looks for the record under it).
	for _, e := range entries {
		if e.Name() == recordFile {
			continue
		}
		if err := removeAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("terminate %s: %w", name, err)
		}
	}
	unlock, err := lock(p.home)
	if err != nil {
		return err
	}
	defer unlock()
	// The record, then the directory it leaves empty; whatever else came
	// into it meanwhile goes with it.
	p.recs.forget(name)
	if err := os.Remove(filepath.Join(dir, recordFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("terminate %s: %w", name, err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if err := removeAll(dir); err != nil {
			return fmt.Errorf("terminate %s: %w", name, err)
		}
	}
	return nil
}

// recordFile is a cluster's record in its directory.
const recordFile = "cluster.json"

// removeAll is os.RemoveAll; a test stops it halfway, as a crash would.
var removeAll = os.RemoveAll

// Preempt takes node rank of cluster away as a spot interruption would: it is
// marked preempted first, so that the controller never sees its processes end
// without the cause, then every process of the node is killed at once.
func (p *Provider) Preempt(ctx context.Context, cluster string, rank int) error {
	if err := p.check(); err != nil {
		return err
	}
	unlock, err := lock(p.home)
	if err != nil {
		return err
	}
	rec, err := p.read(cluster)
	if errors.Is(err, fs.ErrNotExist) {
		unlock()
		return fmt.Errorf("preempt %s: no such local cluster", cluster)
	}
	if err != nil {
		unlock()
		return fmt.Errorf("preempt %s: %w", cluster, err)
	}
	if rank < 0 || rank >= len(rec.Nodes) {
		unlock()
		return fmt.Errorf("preempt %s: node rank %d out of range; the cluster has ranks 0-%d", cluster, rank, len(rec.Nodes)-1)
	}
	rec.Nodes[rank].State, rec.Nodes[rank].Reason = provision.NodePreempted, PreemptReason
	err = p.write(rec)
	unlock()
	if err != nil {
		return fmt.Errorf("preempt %s: %w", cluster, err)
	}
	if err := killNodes(ctx, []string{p.nodeDir(cluster, rank)}, 0); err != nil {
		return fmt.Errorf("preempt %s node %d: %w", cluster, rank, err)
	}
	return nil
}

// Runner reaches node rank of c: bash in the node's directory.
func (p *Provider) Runner(ctx context.Context, c *provision.Cluster, rank int) (provision.Runner, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if c == nil || checkName(c.Name) != nil {
		return nil, errors.New("runner: no cluster given")
	}
	if rank < 0 || rank >= len(c.Nodes) {
		return nil, fmt.Errorf("runner for %s: node rank %d out of range; the cluster has %d nodes", c.Name, rank, len(c.Nodes))
	}
	dir := p.nodeDir(c.Name, rank)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("runner for %s node %d: the node is gone: %w", c.Name, rank, err)
	}
	return &runner{dir: dir, sandbox: p.sandbox}, nil
}
