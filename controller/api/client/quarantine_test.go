package client

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"sortie/controller/api"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// loseNodes stores n jobs whose attempts on sim/sim-east/zone lost their node.
func loseNodes(t *testing.T, st *store.Store, zone string, n int) {
	t.Helper()
	loseNodesOn(t, st, zone, "", "", n)
}

// loseNodesOn stores n jobs whose attempts on an instance type in
// sim/sim-east/zone, or on a host, lost their node.
func loseNodesOn(t *testing.T, st *store.Store, zone, instanceType, host string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		key := fmt.Sprintf("inputs-%s-%s-%s-%d", zone, instanceType, host, i)
		id, err := st.CreateJob(ctx, &store.Job{Name: "lost", Spec: []byte(`{}`), InputKey: key}, []store.NewTask{{Name: "t", InputKey: key}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := st.NewAttempt(ctx, id, 0, func(n int) string { return fmt.Sprintf("sortie-lost-%d-%d", id, n) }, nil, lifecycle.Starting)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SetPlacement(ctx, a.ID, "sim", "sim-east", zone, instanceType, store.Billing{}); err != nil {
			t.Fatal(err)
		}
		if err := st.MarkLaunched(ctx, a.ID, "sim", "sim-east", zone, []string{"n0"}); err != nil {
			t.Fatal(err)
		}
		if host != "" {
			if err := st.SetHost(ctx, a.ID, host); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.MarkRunning(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.NodeLost, Reason: "cluster is gone"},
			strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Rule: strategy.RuleNoRecovery, Reason: "node lost"}, store.Facts{}); err != nil {
			t.Fatal(err)
		}
	}
}

// Every user sees the quarantined placements; only an admin clears one,
// and a user who is none hears why.
func TestQuarantineThroughAServer(t *testing.T) {
	ctx := context.Background()
	alice, _, svc := serve(t, nil)
	loseNodes(t, svc.Store, "sim-east-a", 3)
	qs, err := alice.Quarantine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Zone != "sim-east-a" || len(qs[0].Jobs) != 3 || qs[0].Cause != "lost their node" {
		t.Fatalf("quarantine: %+v, want sim-east-a by 3 jobs", qs)
	}
	pl := strategy.QuarantineKey{Placement: schema.Placement{Cloud: "sim", Region: "sim-east", Zone: "sim-east-a"}}
	_, err = alice.ClearQuarantine(ctx, pl)
	if ae := (*contract.AdminError)(nil); !errors.As(err, &ae) || err.Error() != "only an admin may clear a quarantine: ask an admin of the server" {
		t.Fatalf("alice's clear: %v, want it refused as an admin's", err)
	}
	tok, hash, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Store.AddUser(ctx, "root", hash, true); err != nil {
		t.Fatal(err)
	}
	root := New(alice.URL, tok, func(string) string { return "" })
	c, err := root.ClearQuarantine(ctx, pl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Zone != "sim-east-a" || !c.WasQuarantined {
		t.Errorf("cleared: %+v", c)
	}
	if qs, err := alice.Quarantine(ctx); err != nil || len(qs) != 0 {
		t.Errorf("after the clear: %+v, %v; want none", qs, err)
	}

	// An instance type in a zone and a node, listed and cleared each.
	loseNodesOn(t, svc.Store, "sim-east-b", "big", "", 3)
	loseNodesOn(t, svc.Store, "sim-east-c", "", "host-7", 3)
	qs, err = alice.Quarantine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Placement != "sim/sim-east/node=host-7" || qs[0].Level != "node" || qs[0].Node == nil || *qs[0].Node != "host-7" ||
		qs[1].Placement != "sim/sim-east/sim-east-b/type=big" || qs[1].InstanceType == nil || *qs[1].InstanceType != "big" {
		t.Fatalf("quarantine: %+v, want a node and a type", qs)
	}
	for _, q := range qs {
		k, err := strategy.ParseQuarantineKey(q.Placement)
		if err != nil {
			t.Fatal(err)
		}
		c, err := root.ClearQuarantine(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if c.Placement != q.Placement || c.Level != q.Level || !c.WasQuarantined {
			t.Errorf("cleared %s: %+v", q.Placement, c)
		}
	}
	if qs, err := alice.Quarantine(ctx); err != nil || len(qs) != 0 {
		t.Errorf("after the clears: %+v, %v; want none", qs, err)
	}
}
