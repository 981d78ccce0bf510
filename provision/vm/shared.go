package vm

import (
	"context"
	"sync"
	"time"
)

// Shared lets one cloud call answer every caller that asks for the same key
// while the answer is younger than MaxAge: the controller's ticks each ask a
// provider about a shard of the jobs, and one list call per region per poll
// interval answers all of them. Callers that ask while the call is in flight
// wait for it. An error is never shared past the call that got it. With
// MaxAge zero or less, every Get calls fetch.
//
// Shared values are handed to every caller: they must not change them.
type Shared[V any] struct {
	MaxAge time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Timeout bounds a shared call, which runs on past a caller that gives
	// up since it answers others too; zero means a minute.
	Timeout time.Duration

	mu      sync.Mutex
	entries map[string]*sharedCall[V]
}

// sharedCall is one call's answer, shared while it is young.
type sharedCall[V any] struct {
	at   time.Time     // when the call began
	done chan struct{} // closed once val and err are set
	val  V
	err  error
}

// Get returns key's shared answer while it is young, else calls fetch.
func (s *Shared[V]) Get(ctx context.Context, key string, fetch func(context.Context) (V, error)) (V, error) {
	if s.MaxAge <= 0 {
		return fetch(ctx)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	at := now()
	s.mu.Lock()
	if s.entries == nil {
		s.entries = map[string]*sharedCall[V]{}
	}
	if e := s.entries[key]; e != nil && at.Sub(e.at) < s.MaxAge {
		s.mu.Unlock()
		select {
		case <-e.done:
			return e.val, e.err
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
	e := &sharedCall[V]{at: at, done: make(chan struct{})}
	s.entries[key] = e
	s.mu.Unlock()
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	// The call answers others too: one caller giving up must not fail it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	e.val, e.err = fetch(cctx)
	close(e.done)
	if e.err != nil {
		s.drop(key, e)
	}
	return e.val, e.err
}

// Forget drops key's shared answer: the caller changed what it describes
// (launched or terminated machines), and the next Get asks afresh.
func (s *Shared[V]) Forget(key string) { s.drop(key, nil) }

// drop deletes key's entry when it is e, or whatever it is when e is nil.
func (s *Shared[V]) drop(key string, e *sharedCall[V]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.entries[key]; cur != nil && (e == nil || cur == e) {
		delete(s.entries, key)
	}
}
