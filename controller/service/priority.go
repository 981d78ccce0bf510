package service

import (
	"context"
	"errors"
	"fmt"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
)

// SetPriority is `jobs priority ID N`: it changes a waiting job's
// priority, which orders it among the jobs waiting for the limits
// (strategy.Admit). The owner may lower their own job's; only an admin may
// raise one or change another user's. A job that started, is starting or
// ended keeps its priority (contract.ErrNotWaiting, naming its status).
func (s *Service) SetPriority(ctx context.Context, id int64, priority int) (*contract.PriorityView, error) {
	if priority < schema.MinPriority || priority > schema.MaxPriority {
		return nil, &contract.UsageError{Err: fmt.Errorf("priority: %d is not a priority; use a whole number from %d (lowest) to %d (highest); the default is %d",
			priority, schema.MinPriority, schema.MaxPriority, schema.DefaultPriority)}
	}
	j, err := s.job(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.mayAct(j, "change the priority of"); err != nil {
		return nil, err
	}
	if err := notWaiting(j); err != nil {
		return nil, err
	}
	a := s.asker()
	if priority > j.Priority && !a.Admin {
		return nil, &contract.AdminError{Verb: fmt.Sprintf("raise a job's priority (job %d is at %d; you may lower it)", id, j.Priority)}
	}
	if priority == j.Priority {
		return &contract.PriorityView{JobID: id, Priority: priority, Previous: j.Priority}, nil
	}
	if err := s.Store.SetPriority(ctx, id, priority, a.Name); err != nil {
		if errors.Is(err, store.ErrNotWaiting) {
			// It started between the read and the change.
			if now, rerr := s.job(ctx, id); rerr == nil {
				if nw := notWaiting(now); nw != nil {
					return nil, nw
				}
			}
			return nil, &sentinelError{err: err, is: contract.ErrNotWaiting}
		}
		return nil, fmt.Errorf("change the priority of job %d: %w", id, err)
	}
	return &contract.PriorityView{JobID: id, Priority: priority, Previous: j.Priority}, nil
}

// notWaiting refuses a change meant for a waiting job when j no longer
// waits, naming its status.
func notWaiting(j *store.Job) error {
	switch {
	case j.Status != lifecycle.Pending:
		return fmt.Errorf("job %d is %s: %w", j.ID, j.Status, contract.ErrNotWaiting)
	case j.AdmittedAt != nil:
		return fmt.Errorf("job %d is PENDING but was admitted at %s and is starting: %w", j.ID, j.AdmittedAt.UTC().Format("2006-01-02T15:04:05Z"), contract.ErrNotWaiting)
	}
	return nil
}
