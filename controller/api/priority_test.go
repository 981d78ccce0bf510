package api

import (
	"context"
	"strings"
	"testing"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// POST /v1/jobs/{id}/priority: bob's token cannot touch alice's job,
// alice may lower but not raise hers, an admin may raise it, a bad body or
// priority is a usage error, and a job that started is a conflict naming
// its status.
func TestPriorityRoute(t *testing.T) {
	ts := newTestServer(t, Options{})
	var lr contract.LaunchResult
	if resp := ts.do(t, "alice", "POST", "/v1/jobs", contract.LaunchRequest{File: "t.yaml", Task: []byte("run: 'true'\nresources: {cloud: sim}\n")}, &lr); resp.StatusCode != 201 {
		t.Fatalf("launch: %d", resp.StatusCode)
	}
	id := lr.Job.ID
	path := "/v1/jobs/" + itoa(id) + "/priority"
	var e contract.ErrorBody
	if resp := ts.do(t, "bob", "POST", path, contract.PriorityRequest{Priority: 1}, &e); resp.StatusCode != 403 ||
		e.Error.Code != contract.CodeForbidden || e.Error.Owner != "alice" || e.Error.Job != id {
		t.Fatalf("bob's change of alice's job: %d %+v", resp.StatusCode, e)
	}
	e = contract.ErrorBody{}
	if resp := ts.do(t, "alice", "POST", path, contract.PriorityRequest{Priority: 900}, &e); resp.StatusCode != 403 ||
		e.Error.Code != contract.CodeForbidden || !strings.Contains(e.Error.Message, "only an admin may raise a job's priority") {
		t.Fatalf("alice raises her own: %d %+v", resp.StatusCode, e)
	}
	var v contract.PriorityView
	if resp := ts.do(t, "alice", "POST", path, contract.PriorityRequest{Priority: 200}, &v); resp.StatusCode != 200 || v != (contract.PriorityView{JobID: id, Priority: 200, Previous: 500}) {
		t.Fatalf("alice lowers her own: %d %+v", resp.StatusCode, v)
	}
	if resp := ts.do(t, "root", "POST", path, contract.PriorityRequest{Priority: 900}, &v); resp.StatusCode != 200 || v.Priority != 900 || v.Previous != 200 {
		t.Fatalf("root raises it: %d %+v", resp.StatusCode, v)
	}
	var d contract.JobDetail
	if ts.do(t, "bob", "GET", "/v1/jobs/"+itoa(id), nil, &d); d.Priority != 900 {
		t.Errorf("show: priority %d, want 900", d.Priority)
	}
	for _, body := range []any{contract.PriorityRequest{Priority: 1001}, []byte(`{"priority": "high"}`)} {
		e = contract.ErrorBody{}
		if resp := ts.do(t, "root", "POST", path, body, &e); resp.StatusCode != 400 || e.Error.Code != contract.CodeUsage {
			t.Errorf("body %v: %d %+v, want a usage error", body, resp.StatusCode, e)
		}
	}
	if _, err := ts.svc.Store.NewAttempt(context.Background(), id, 0, func(int) string { return "c" }, nil, lifecycle.Starting); err != nil {
		t.Fatal(err)
	}
	e = contract.ErrorBody{}
	if resp := ts.do(t, "root", "POST", path, contract.PriorityRequest{Priority: 1}, &e); resp.StatusCode != 409 ||
		e.Error.Code != contract.CodeConflict || e.Error.Verb != "not_waiting" || !strings.Contains(e.Error.Message, "is STARTING") {
		t.Fatalf("a started job: %d %+v", resp.StatusCode, e)
	}
}
