package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sortie/provision"
	"sortie/schema"
)

// cluster is one launched cluster. Exported fields are its saved state.
type cluster struct {
	Name    string            `json:"name"`
	Region  string            `json:"region"`
	Zone    string            `json:"zone"`
	Tags    map[string]string `json:"tags"`
	Attempt int               `json:"attempt"` // the attempt it was launched for, from its tags
	ReadyAt time.Time         `json:"ready_at"`
	Nodes   []*hollowNode     `json:"nodes"`
	// PreemptFrac > 0 plans a preemption of node PreemptRank at that
	// fraction of RunTime after the first task starts (PreemptAt).
	PreemptFrac float64    `json:"preempt_frac,omitempty"`
	PreemptRank int        `json:"preempt_rank,omitempty"`
	PreemptAt   *time.Time `json:"preempt_at,omitempty"`
	// Running is the task last started on the cluster, which a preemption
	// ends.
	Running taskKey `json:"running"`
	// Reported is set once a Status has shown a preempted node.
	Reported bool `json:"reported,omitempty"`
	// LosesNode: the cluster is in a zone of Config.LoseNodesIn, so its
	// first node is terminated once a task has started on it.
	LosesNode bool `json:"loses_node,omitempty"`
}

// LostReason is the reason a node lost to Config.LoseNodesIn is reported
// with, as a provider reports a host failure.
const LostReason = "the host failed (sim.lose_nodes_in)"

// hollowNode is one node: no process, only the tasks started on it, by the
// directory the controller gave them.
type hollowNode struct {
	ID        string           `json:"id"`
	IP        string           `json:"ip"`
	Preempted bool             `json:"preempted,omitempty"`
	Tasks     map[string]*task `json:"tasks,omitempty"`
}

func (c *cluster) placement() schema.Placement {
	return schema.Placement{Cloud: CloudName, Region: c.Region, Zone: c.Zone}
}

// state is node rank's state at now.
func (c *cluster) state(rank int, now time.Time) (provision.NodeState, string) {
	n := c.Nodes[rank]
	if n.Preempted || (c.PreemptAt != nil && rank == c.PreemptRank && !now.Before(*c.PreemptAt)) {
		return provision.NodePreempted, PreemptReason
	}
	if now.Before(c.ReadyAt) {
		return provision.NodePending, "booting"
	}
	if c.LosesNode && rank == 0 && len(n.Tasks) > 0 {
		return provision.NodeGone, LostReason
	}
	return provision.NodeRunning, ""
}

func (c *cluster) preempted(now time.Time) bool {
	for rank := range c.Nodes {
		if st, _ := c.state(rank, now); st == provision.NodePreempted {
			return true
		}
	}
	return false
}

// view is the cluster as the provider reports it.
func (c *cluster) view(now time.Time) *provision.Cluster {
	out := &provision.Cluster{Name: c.Name, Placement: c.placement(), Tags: maps.Clone(c.Tags), Nodes: make([]provision.Node, len(c.Nodes))}
	for i, n := range c.Nodes {
		st, reason := c.state(i, now)
		out.Nodes[i] = provision.Node{Rank: i, InstanceID: n.ID, IP: n.IP, State: st, Reason: reason}
	}
	return out
}

// Launch creates the cluster and waits out the boot delay. A cluster of the
// same name is returned as it is, once booted.
func (p *Provider) Launch(ctx context.Context, spec provision.ClusterSpec) (*provision.Cluster, error) {
	// Ports, disk and network tiers and labels mean nothing to hollow
	// nodes: accepted and ignored.
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
		return nil, provision.Prechecks(fmt.Errorf("launch %s: placement %s is not offered by the sim provider; offered: %s", spec.Name, at, p.offered()))
	}
	p.mu.Lock()
	p.syncIn(spec.Name)
	// A launch that fails for capacity is a request too: the decision was
	// made, the cloud said no.
	if reason, ok := p.broken[spec.Name]; ok {
		p.syncOut()
		p.mu.Unlock()
		return nil, fmt.Errorf("launch %s: %w", spec.Name, &provision.StateError{Path: p.statePath(), Err: errors.New(reason)})
	}
	line := p.requested(keyOf(spec))
	c := p.clusters[spec.Name]
	created := c == nil
	if created {
		k := zoneKey(at)
		if lim := p.limit(k); lim >= 0 && p.inUse[k]+n > lim {
			p.syncOut()
			p.mu.Unlock()
			p.decisions.write(line)
			return nil, provision.Capacity(fmt.Errorf("launch %s: sim zone %s is full (%d of %d nodes in use, %d asked)", spec.Name, k, p.inUse[k], lim, n))
		}
		c = p.newCluster(spec, at, n)
	}
	ready := c.ReadyAt
	p.changed()
	p.syncOut(spec.Name)
	save := p.saveDue(p.cfg.Now())
	p.mu.Unlock()
	p.decisions.write(line)
	p.logSave(save())
	if created {
		p.logger(ctx).Debug("launched cluster", "cluster", spec.Name, "placement", at.String(), "nodes", n)
	}

	if wait := ready.Sub(p.cfg.Now()); wait > 0 {
		if err := p.cfg.Sleep(ctx, wait); err != nil {
			if created {
				// Nothing of a failed launch is left running.
				p.mu.Lock()
				p.syncIn(spec.Name)
				if now := p.clusters[spec.Name]; now == c || (created && now != nil && now.ReadyAt.Equal(c.ReadyAt)) {
					p.remove(now)
				}
				p.syncOut(spec.Name)
				p.mu.Unlock()
			}
			return nil, fmt.Errorf("launch %s: wait for boot: %w", spec.Name, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.view(p.cfg.Now()), nil
}

// newCluster records a new cluster; p.mu is held.
func (p *Provider) newCluster(spec provision.ClusterSpec, at schema.Placement, n int) *cluster {
	now := p.cfg.Now()
	c := &cluster{Name: spec.Name, Region: at.Region, Zone: at.Zone, Tags: maps.Clone(spec.Tags),
		ReadyAt: now.Add(p.cfg.BootDelay), Nodes: make([]*hollowNode, n)}
	c.Running = keyOf(spec)
	c.Attempt = c.Running.Attempt
	if c.Attempt == 0 {
		c.Attempt = 1
	}
	c.LosesNode = slices.Contains(p.cfg.LoseNodesIn, at.Zone)
	if p.cfg.Preempts(c.Name, c.Attempt) {
		c.PreemptFrac = 0.1 + 0.5*frac(p.cfg.Seed, "preempt-at", c.Name)
		c.PreemptRank = int(frac(p.cfg.Seed, "preempt-rank", c.Name) * float64(n))
	}
	for i := range c.Nodes {
		id, ip := p.instanceID(c.Name, i)
		c.Nodes[i] = &hollowNode{ID: id, IP: ip}
	}
	p.clusters[c.Name] = c
	p.inUse[zoneKey(at)] += n
	return c
}

// keyOf reads the job, task and attempt from a cluster's tags, falling back
// on its name (sortie-<job>-<task>-<attempt>); zero when neither says.
func keyOf(spec provision.ClusterSpec) taskKey {
	job, _ := strconv.ParseInt(spec.Tags[provision.TagJob], 10, 64)
	task, _ := strconv.Atoi(spec.Tags[provision.TagTask])
	attempt, _ := strconv.Atoi(spec.Tags[provision.TagAttempt])
	if job == 0 {
		parts := strings.Split(strings.TrimPrefix(spec.Name, "sortie-"), "-")
		if len(parts) == 3 {
			job, _ = strconv.ParseInt(parts[0], 10, 64)
			task, _ = strconv.Atoi(parts[1])
			attempt, _ = strconv.Atoi(parts[2])
		}
	}
	return taskKey{Job: job, Task: task, Attempt: attempt}
}

// remove forgets c and frees its capacity; p.mu is held. A terminated
// cluster is gone at once, as it soon is from a real cloud's listings.
func (p *Provider) remove(c *cluster) {
	delete(p.clusters, c.Name)
	k := zoneKey(c.placement())
	if p.inUse[k] -= len(c.Nodes); p.inUse[k] <= 0 {
		delete(p.inUse, k)
	}
	p.changed()
}

// Status reports the named clusters in one call.
func (p *Provider) Status(ctx context.Context, names []string) (map[string]*provision.Cluster, error) {
	out := make(map[string]*provision.Cluster, len(names))
	p.mu.Lock()
	p.syncIn(names...)
	now := p.cfg.Now()
	for _, name := range names {
		c := p.clusters[name]
		if reason, ok := p.broken[name]; ok {
			broken := &provision.StateError{Path: p.statePath(), Err: errors.New(reason)}
			out[name] = &provision.Cluster{Name: name, Placement: schema.Placement{Cloud: CloudName}, Broken: broken.Error()}
		}
		if c == nil {
			continue
		}
		out[name] = c.view(now)
		if !c.Reported && c.preempted(now) {
			c.Reported = true
			p.seenEnd(c.Running, now)
			p.changed()
		}
	}
	p.syncOut(names...)
	save := p.saveDue(now)
	p.mu.Unlock()
	p.logSave(save())
	return out, nil
}

// Terminate removes the cluster; a cluster that is gone is no error.
func (p *Provider) Terminate(ctx context.Context, name string) error {
	p.mu.Lock()
	p.syncIn(name)
	c := p.clusters[name]
	if c != nil {
		p.remove(c)
	}
	delete(p.broken, name)
	p.syncOut(name)
	save := p.saveDue(p.cfg.Now())
	p.mu.Unlock()
	p.logSave(save())
	if c != nil {
		p.logger(ctx).Debug("terminated cluster", "cluster", name)
	}
	return nil
}

// List returns every cluster, in name order.
func (p *Provider) List(ctx context.Context) ([]*provision.Cluster, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shared != nil {
		p.syncAll()
	}
	now := p.cfg.Now()
	out := make([]*provision.Cluster, 0, len(p.clusters))
	for _, c := range p.clusters {
		out = append(out, c.view(now))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Preempt takes node rank of the named cluster away, as a spot
// interruption would.
func (p *Provider) Preempt(name string, rank int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncIn(name)
	defer p.syncOut(name)
	c := p.clusters[name]
	if c == nil {
		return fmt.Errorf("preempt %s: no such sim cluster", name)
	}
	if rank < 0 || rank >= len(c.Nodes) {
		return fmt.Errorf("preempt %s: node %d does not exist (the cluster has %d)", name, rank, len(c.Nodes))
	}
	c.Nodes[rank].Preempted = true
	p.changed()
	return nil
}

// changed marks the state as needing a save; p.mu is held.
func (p *Provider) changed() { p.dirty = true }
