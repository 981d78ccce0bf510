package service

import (
	"context"
	"fmt"
	"slices"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
)

// jobs lists the jobs f selects among those of the statuses allowed (the
// ended ones for a retry, the unfinished ones for a cancel), oldest first:
// f's statuses must each be one of them, and when f names none every
// allowed status is taken. which says what allowed is, for the error.
func (s *Service) filtered(ctx context.Context, f contract.Filter, allowed []lifecycle.Status, which string) ([]*store.Job, error) {
	for _, st := range f.Statuses {
		if !slices.Contains(allowed, st) {
			return nil, &contract.UsageError{Err: fmt.Errorf("--status: %q is not a status of %s (one of %s)", st, which, joinStatuses(allowed))}
		}
	}
	if err := store.ValidGlob(f.NameGlob); err != nil {
		return nil, &contract.UsageError{Err: fmt.Errorf("--name: %q is not a valid pattern: %v", f.NameGlob, err)}
	}
	sf := store.JobFilter{Statuses: f.Statuses, NameGlob: f.NameGlob, Since: f.Since, Ascending: true, Owner: s.onlyOwn()}
	if len(sf.Statuses) == 0 {
		sf.Statuses = allowed
	}
	jobs, err := s.Store.Jobs(ctx, sf)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// keepsCluster says whether ended job id keeps its cluster, not yet asked
// to let it go: a cancel naming it releases the cluster.
func (s *Service) keepsCluster(ctx context.Context, id int64) bool {
	a, err := s.Store.KeptAttempt(ctx, id)
	return err == nil && a != nil && a.ReleaseRequested == "" && a.ReleasedAt == nil
}
