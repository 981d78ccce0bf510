package client

import (
	"context"
	"errors"
	"testing"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// `jobs priority` through a server: the owner lowers their job, another
// user is refused as without a server, and a job no longer waiting comes
// back as the service's ErrNotWaiting.
func TestSetPriorityThroughAServer(t *testing.T) {
	ctx := context.Background()
	alice, bob, svc := serve(t, nil)
	v, err := alice.Launch(ctx, contract.LaunchRequest{File: "t.yaml", Task: []byte("run: 'true'\nresources: {cloud: sim}\n")})
	if err != nil {
		t.Fatal(err)
	}
	p, err := alice.SetPriority(ctx, v.ID, 10)
	if err != nil || *p != (contract.PriorityView{JobID: v.ID, Priority: 10, Previous: 500}) {
		t.Fatalf("alice lowers hers: %+v %v", p, err)
	}
	var fe *contract.ForbiddenError
	if _, err := bob.SetPriority(ctx, v.ID, 5); !errors.As(err, &fe) || fe.Owner != "alice" {
		t.Fatalf("bob: %v, want forbidden", err)
	}
	if _, err := svc.Store.NewAttempt(ctx, v.ID, 0, func(int) string { return "c" }, nil, lifecycle.Starting); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SetPriority(ctx, v.ID, 5); !errors.Is(err, contract.ErrNotWaiting) {
		t.Fatalf("a started job: %v, want ErrNotWaiting", err)
	}
}
