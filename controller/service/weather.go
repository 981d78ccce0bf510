package service

import (
	"context"
	"fmt"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/provision/local"
	"sortie/schema"
)

// Preempt takes node rank of job id's running attempt away, as a spot
// interruption would. Only for jobs on the local provider.
func (s *Service) Preempt(ctx context.Context, id int64, rank int) (string, error) {
	j, err := s.job(ctx, id)
	if err != nil {
		return "", err
	}
	a, err := s.Store.LastAttempt(ctx, j.ID, j.CurrentTask)
	if err != nil {
		return "", err
	}
	if a == nil || a.State == lifecycle.AttemptEnded || a.State == lifecycle.AttemptLaunching {
		return "", &UsageError{Err: fmt.Errorf("job %d has no running cluster to preempt (status %s)", id, j.Status)}
	}
	if a.Cloud != "local" {
		return "", &UsageError{Err: fmt.Errorf("job %d runs on %s; `sortie local preempt` only reaches the local provider", id, a.Cloud)}
	}
	if rank < 0 || (len(a.InstanceIDs) > 0 && rank >= len(a.InstanceIDs)) {
		return "", &UsageError{Err: fmt.Errorf("--node: %d is not a node of job %d (0-%d)", rank, id, len(a.InstanceIDs)-1)}
	}
	return a.Cluster, clouds.LocalProvider(s.Config).Preempt(ctx, a.Cluster, rank)
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
		return &UsageError{Err: fmt.Errorf("%s is not a local region/zone; configure local.regions in %s/config.yaml", p, s.Home)}
	}
	return local.SetCapacity(s.Home, p, on)
}
