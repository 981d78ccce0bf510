package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sortie/controller/store"
)

// ReplicaView is one replica of the controller sharing the store, as
// `sortie replicas status -o json` prints it.
type ReplicaView struct {
	Name        string    `json:"name"`
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// HeartbeatAge is how long ago the last heartbeat was, in seconds.
	HeartbeatAge float64 `json:"heartbeat_age_s"`
	// LeaseTTL is how long its leases last unless renewed, in seconds.
	LeaseTTL float64 `json:"lease_ttl_s"`
	// Live is false once the heartbeat is older than the TTL: the
	// replica is dead, and its jobs go to the others.
	Live bool `json:"live"`
	// Jobs is how many unfinished jobs it holds a live lease on.
	Jobs int `json:"jobs"`
}

// Replicas lists the replicas of the store, newest heartbeat first.
func (s *Service) Replicas(ctx context.Context) ([]ReplicaView, error) {
	rs, err := s.Store.Replicas(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the replicas: %w", err)
	}
	now := s.Now()
	out := make([]ReplicaView, 0, len(rs))
	for _, r := range rs {
		age := now.Sub(r.HeartbeatAt)
		out = append(out, ReplicaView{Name: r.Name, ID: r.ID, Host: r.Host, PID: r.PID, StartedAt: r.StartedAt.UTC(), HeartbeatAt: r.HeartbeatAt,
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
