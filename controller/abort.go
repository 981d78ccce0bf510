package controller

import (
	"context"
	"errors"
	"sync"
)

// errCancelRequested is the cause of a launch or start stopped because its
// job is being cancelled.
var errCancelRequested = errors.New("the job is being cancelled")

// abortSet holds what stops each job's launch or start in flight.
type abortSet struct {
	mu   sync.Mutex
	stop map[int64]context.CancelCauseFunc
}

// watch returns a context of ctx that abort(id) ends with
// errCancelRequested, and a func to call when the work is over.
func (s *abortSet) watch(ctx context.Context, id int64) (context.Context, func()) {
	actx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	if s.stop == nil {
		s.stop = map[int64]context.CancelCauseFunc{}
	}
	s.stop[id] = cancel
	s.mu.Unlock()
	return actx, func() {
		s.mu.Lock()
		delete(s.stop, id)
		s.mu.Unlock()
		cancel(nil)
	}
}

// abort stops job id's launch or start in flight, if any.
func (s *abortSet) abort(id int64) {
	s.mu.Lock()
	cancel := s.stop[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel(errCancelRequested)
	}
}

// cancelled says whether ctx, made by watch, was stopped by a cancel.
func cancelled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errCancelRequested)
}
