package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sortie/controller/contract"
	"sortie/controller/store"
)

// Replicas lists the replicas of the store, newest heartbeat first.
func (s *Service) Replicas(ctx context.Context) ([]contract.ReplicaView, error) {
	rs, err := s.Store.Replicas(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the replicas: %w", err)
	}
	now := s.Now()
	out := make([]contract.ReplicaView, 0, len(rs))
	for _, r := range rs {
		age := now.Sub(r.HeartbeatAt)
		out = append(out, contract.ReplicaView{Name: r.Name, ID: r.ID, Host: r.Host, PID: r.PID, StartedAt: r.StartedAt.UTC(), HeartbeatAt: r.HeartbeatAt,
			HeartbeatAge: age.Round(time.Millisecond).Seconds(), LeaseTTL: r.TTL.Seconds(), Live: age <= r.TTL, Jobs: r.Jobs})
	}
	return out, nil
}

// replicasDrive says which replicas drive the store's jobs, when live ones
// do: a controller of the home's own must not start beside them.
func replicasDrive(ctx context.Context, st *store.Store) (string, bool) {
	live, err := st.LiveReplicas(ctx)
	if err != nil || len(live) == 0 {
		return "", false
	}
	return strings.Join(live, ", "), true
}

// startDaemon starts the controller of h when no replicas drive the
// store's jobs; replicas see a new job or a cancel at their next claim or
// tick, without being told.
func startDaemon(st *store.Store, start func(ctx context.Context, h string) error) func(ctx context.Context, h string) error {
	return func(ctx context.Context, h string) error {
		if _, ok := replicasDrive(ctx, st); ok {
			return nil
		}
		return start(ctx, h)
	}
}
