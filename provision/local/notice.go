package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"sortie/provision"
)

// PreemptAt gives node rank of cluster a notice: at the time at, the node
// is taken away as Preempt does (by the first Status that asks after that
// time). Until then the node runs: its agent, told of the notice through
// its directory (notice.WriteRequest), stops the task.
func (p *Provider) PreemptAt(ctx context.Context, cluster string, rank int, at time.Time) error {
	if err := p.check(); err != nil {
		return err
	}
	unlock, err := lock(p.home)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := p.read(cluster)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("notice to %s: no such local cluster", cluster)
	}
	if err != nil {
		return fmt.Errorf("notice to %s: %w", cluster, err)
	}
	if rank < 0 || rank >= len(rec.Nodes) {
		return fmt.Errorf("notice to %s: node rank %d out of range; the cluster has ranks 0-%d", cluster, rank, len(rec.Nodes)-1)
	}
	if rec.Nodes[rank].State != provision.NodeRunning {
		return fmt.Errorf("notice to %s: node %d is %s already", cluster, rank, rec.Nodes[rank].State)
	}
	t := at.UTC()
	rec.Nodes[rank].PreemptAt = &t
	if err := p.write(rec); err != nil {
		return fmt.Errorf("notice to %s: %w", cluster, err)
	}
	return nil
}

// preemptDue takes away the nodes of rec whose notice's time has come; it
// says whether it took one.
func (p *Provider) preemptDue(ctx context.Context, rec *record) bool {
	took := false
	now := p.now()
	for _, n := range rec.Nodes {
		if n.State != provision.NodeRunning || n.PreemptAt == nil || now.Before(*n.PreemptAt) {
			continue
		}
		if err := p.Preempt(ctx, rec.Name, n.Rank); err == nil {
			took = true
		}
	}
	return took
}
