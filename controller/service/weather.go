package service

import (
	"context"
	"fmt"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision/local"
	"sortie/provision/node"
	"sortie/provision/node/notice"
	"sortie/schema"
)

// Preempt takes node rank of job id's running attempt away, as a spot
// interruption would. Only for jobs on the local provider.
func (s *Service) Preempt(ctx context.Context, id int64, rank int) (string, error) {
	a, err := s.localAttempt(ctx, id, rank)
	if err != nil {
		return "", err
	}
	return a.Cluster, clouds.LocalProvider(s.Config).Preempt(ctx, a.Cluster, rank)
}

// MaxNotice bounds `local preempt --notice`: AWS gives two minutes, GCE
// thirty seconds; an hour leaves room for slow demos.
const MaxNotice = time.Hour

// Notice gives node rank of job id's running attempt a preemption notice:
// the node's agent hears it (a request file in the node's directory) and
// stops the task, and the node is taken away after d, as Preempt does. The
// notice is recorded with the attempt at once and the controller nudged,
// so the replacement starts without waiting for a poll. It returns the
// cluster and the deadline.
func (s *Service) Notice(ctx context.Context, id int64, rank int, d time.Duration) (string, time.Time, error) {
	if d <= 0 || d > MaxNotice {
		return "", time.Time{}, &contract.UsageError{Err: fmt.Errorf("--notice: %s is out of range; give a duration from 1s to %s (AWS gives 2m, GCE 30s)", d, MaxNotice)}
	}
	a, err := s.localAttempt(ctx, id, rank)
	if err != nil {
		return "", time.Time{}, err
	}
	prov := clouds.LocalProvider(s.Config)
	got, err := prov.Status(ctx, []string{a.Cluster})
	if err != nil {
		return "", time.Time{}, err
	}
	cl := got[a.Cluster]
	if cl == nil || rank >= len(cl.Nodes) {
		return "", time.Time{}, &contract.UsageError{Err: fmt.Errorf("job %d: cluster %s has no node %d any more", id, a.Cluster, rank)}
	}
	r, err := prov.Runner(ctx, cl, rank)
	if err != nil {
		return "", time.Time{}, err
	}
	defer r.Close()
	now := s.Now()
	deadline := now.Add(d)
	if err := notice.WriteRequest(node.ForAttempt(r, a.Attempt).Dir(), notice.Request{Kind: notice.KindPreempted, Deadline: deadline}); err != nil {
		return "", time.Time{}, err
	}
	if err := prov.PreemptAt(ctx, a.Cluster, rank, deadline); err != nil {
		return "", time.Time{}, err
	}
	if _, err := s.Store.RecordNotice(ctx, a, store.Notice{Kind: notice.KindPreempted, Source: notice.SourceLocal, At: now, Deadline: &deadline}); err != nil {
		return "", time.Time{}, err
	}
	if s.StartDaemon != nil {
		if err := s.StartDaemon(ctx, s.Home); err != nil {
			return "", time.Time{}, err
		}
	}
	return a.Cluster, deadline, nil
}

// localAttempt is job id's running attempt on the local provider, whose
// node rank the weather commands reach.
func (s *Service) localAttempt(ctx context.Context, id int64, rank int) (*store.Attempt, error) {
	j, err := s.job(ctx, id)
	if err != nil {
		return nil, err
	}
	a, err := s.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil {
		return nil, err
	}
	if a == nil || a.State == lifecycle.AttemptEnded || a.State == lifecycle.AttemptLaunching || a.ReplacedAt != nil {
		return nil, &contract.UsageError{Err: fmt.Errorf("job %d has no running cluster to preempt (status %s)", id, j.Status)}
	}
	if a.Cloud != "local" {
		return nil, &contract.UsageError{Err: fmt.Errorf("job %d runs on %s; `sortie local preempt` only reaches the local provider", id, a.Cloud)}
	}
	if rank < 0 || (len(a.InstanceIDs) > 0 && rank >= len(a.InstanceIDs)) {
		return nil, &contract.UsageError{Err: fmt.Errorf("--node: %d is not a node of job %d (0-%d)", rank, id, len(a.InstanceIDs)-1)}
	}
	return a, nil
}

// SetCapacity turns capacity at a local placement on or off.
func (s *Service) SetCapacity(p schema.Placement, on bool) error {
	known := false
	for _, r := range clouds.LocalRegions(s.Config) {
		if r.Name != p.Region {
			continue
		}
		known = p.Zone == ""
		for _, z := range r.Zones {
			known = known || z == p.Zone
		}
	}
	if !known {
		return &contract.UsageError{Err: fmt.Errorf("%s is not a local region/zone; configure local.regions in %s/config.yaml", p, s.Home)}
	}
	return local.SetCapacity(s.Home, p, on)
}
