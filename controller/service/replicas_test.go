package service

import (
	"context"
	"testing"
	"time"

	"sortie/controller/store"
)

// While live replicas drive the store, a launch or a cancel starts no
// controller of the home's own; the status tells a dead replica by its
// heartbeat's age.
func TestNoControllerStartsBesideReplicas(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	starts := 0
	start := startDaemon(s.Store, func(context.Context, string) error { starts++; return nil })
	if err := start(ctx, s.Home); err != nil || starts != 1 {
		t.Fatalf("no replicas: %d starts, %v", starts, err)
	}
	if err := s.Store.RegisterReplica(ctx, store.Replica{ID: "r1-x", Name: "r1", Host: "h", PID: 9, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := start(ctx, s.Home); err != nil || starts != 1 {
		t.Fatalf("a live replica: %d starts, %v", starts, err)
	}
	rs, err := s.Replicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Name != "r1" || rs[0].PID != 9 || !rs[0].Live || rs[0].LeaseTTL != 3600 || rs[0].Jobs != 0 {
		t.Fatalf("replicas: %+v", rs)
	}
	s.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if rs, _ := s.Replicas(ctx); rs[0].Live || rs[0].HeartbeatAge < 7200 {
		t.Fatalf("replica two hours after its heartbeat: %+v", rs[0])
	}
}
