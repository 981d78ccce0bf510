package api

import (
	"context"
	"errors"
	"testing"

	"sortie/controller/api/client"
	"sortie/controller/contract"
)

// A launch by a user whose monthly budget is spent is answered 402
// budget_spent with the figures, which the client turns back into the
// service's BudgetError (the CLI's exit status 4); another user launches.
func TestLaunchOverBudgetIs402(t *testing.T) {
	ts := newTestServer(t, Options{})
	zero := 0.0
	if err := ts.svc.Store.SetBudget(context.Background(), "alice", &zero, "root"); err != nil {
		t.Fatal(err)
	}
	req := contract.LaunchRequest{File: "t.yaml", Task: []byte("run: 'true'\nresources: {cloud: sim}\n")}
	var e contract.ErrorBody
	resp := ts.do(t, "alice", "POST", "/v1/jobs", req, &e)
	if resp.StatusCode != 402 || e.Error.Code != contract.CodeBudgetSpent || e.Error.Owner != "alice" ||
		e.Error.Budget == nil || e.Error.Budget.User != "alice" || e.Error.Budget.Budget != 0 || e.Error.Budget.Spent != 0 {
		t.Fatalf("launch over budget: %d %+v", resp.StatusCode, e.Error)
	}
	var be *contract.BudgetError
	if err := client.Error(resp.StatusCode, e.Error); !errors.As(err, &be) || be.User != "alice" || err.Error() != e.Error.Message {
		t.Fatalf("client error %v, want alice's BudgetError with the server's message", err)
	}
	if resp := ts.do(t, "bob", "POST", "/v1/jobs", req, nil); resp.StatusCode != 201 {
		t.Fatalf("bob's launch: %d, want 201", resp.StatusCode)
	}
}
