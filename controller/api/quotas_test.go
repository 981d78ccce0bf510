package api

import (
	"strings"
	"testing"

	"sortie/controller/contract"
)

// /v1/quotas: every user lists the limits; only an admin sets or unsets
// one, whatever the body says of who asks; a bad value or a body of
// another shape is a usage error naming it; an unset of a scope without
// a quota is 404. Set, a quota refuses a launch that could never fit.
func TestQuotasRoutes(t *testing.T) {
	ts := newTestServer(t, Options{})
	one := 1
	var e contract.ErrorBody
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/v1/quotas", contract.QuotaRequest{Scope: "server", RunningJobs: &one}},
		{"PUT", "/v1/quotas", contract.QuotaRequest{Scope: "user", Name: "alice", GPUs: map[string]int{"A100": 1000}}},
		{"POST", "/v1/quotas/unset", contract.QuotaRequest{Scope: "server"}},
		// A field the request does not have cannot make alice an admin.
		{"PUT", "/v1/quotas", []byte(`{"scope": "server", "running_jobs": 1, "admin": true}`)},
	} {
		e = contract.ErrorBody{}
		resp := ts.do(t, "alice", tc.method, tc.path, tc.body, &e)
		if resp.StatusCode == 200 {
			t.Fatalf("alice %s %s %v: 200, want a refusal", tc.method, tc.path, tc.body)
		}
		if _, raw := tc.body.([]byte); !raw && (resp.StatusCode != 403 || e.Error.Code != contract.CodeForbidden ||
			!strings.Contains(e.Error.Message, "only an admin may")) {
			t.Errorf("alice %s %s: %d %+v, want 403 forbidden saying only an admin may", tc.method, tc.path, resp.StatusCode, e)
		}
	}
	// No token, or a token for another route's method, changes nothing.
	for _, tc := range []struct{ user, method, path string }{
		{"", "PUT", "/v1/quotas"}, {"", "POST", "/v1/quotas/unset"}, {"", "GET", "/v1/quotas"}, {"", "GET", "/v1/usage"},
		{"root", "DELETE", "/v1/quotas"}, {"root", "POST", "/v1/quotas"},
	} {
		e = contract.ErrorBody{}
		resp := ts.do(t, tc.user, tc.method, tc.path, contract.QuotaRequest{Scope: "server", RunningJobs: &one}, &e)
		if want := map[bool]int{true: 401, false: 405}[tc.user == ""]; resp.StatusCode != want && !(want == 405 && resp.StatusCode == 404) {
			t.Errorf("%q %s %s: %d %+v, want %d", tc.user, tc.method, tc.path, resp.StatusCode, e, want)
		}
	}
	var qs []contract.QuotaView
	if resp := ts.do(t, "alice", "GET", "/v1/quotas", nil, &qs); resp.StatusCode != 200 || len(qs) != 0 {
		t.Fatalf("alice lists: %d %+v, want none set", resp.StatusCode, qs)
	}

	var v contract.QuotaView
	if resp := ts.do(t, "root", "PUT", "/v1/quotas", contract.QuotaRequest{Scope: "user", Name: "alice", GPUs: map[string]int{"A100": 2}}, &v); resp.StatusCode != 200 ||
		v.Source != "quota" || v.SetBy != "root" || v.Limit.GPUs["A100"] != 2 {
		t.Fatalf("root sets alice's: %d %+v", resp.StatusCode, v)
	}
	if resp := ts.do(t, "alice", "GET", "/v1/quotas", nil, &qs); resp.StatusCode != 200 || len(qs) != 1 || qs[0].Name != "alice" {
		t.Fatalf("alice lists: %d %+v", resp.StatusCode, qs)
	}
	e = contract.ErrorBody{}
	if resp := ts.do(t, "alice", "POST", "/v1/jobs", contract.LaunchRequest{File: "t.yaml",
		Task: []byte("resources: {cloud: sim, accelerators: A100:4}\nrun: x\n")}, &e); resp.StatusCode != 400 ||
		!strings.Contains(e.Error.Message, "asks for 4 A100, more than the user limit of alice of 2") {
		t.Errorf("alice launches 4 A100: %d %+v", resp.StatusCode, e)
	}

	neg := -3
	for _, tc := range []struct {
		body any
		want string
	}{
		{contract.QuotaRequest{Scope: "server", Nodes: &neg}, "--nodes -3"},
		{contract.QuotaRequest{Scope: "everyone"}, `scope "everyone"`},
		{[]byte(`{"scope": "server", "gpu": {"A100": 1}}`), "not the JSON this route takes"},
	} {
		e = contract.ErrorBody{}
		if resp := ts.do(t, "root", "PUT", "/v1/quotas", tc.body, &e); resp.StatusCode != 400 || e.Error.Code != contract.CodeUsage ||
			!strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%v: %d %+v, want a usage error saying %q", tc.body, resp.StatusCode, e, tc.want)
		}
	}
	if resp := ts.do(t, "root", "POST", "/v1/quotas/unset", contract.QuotaRequest{Scope: "user", Name: "alice"}, &v); resp.StatusCode != 200 || v.Source != "none" {
		t.Fatalf("root unsets alice's: %d %+v", resp.StatusCode, v)
	}
	e = contract.ErrorBody{}
	if resp := ts.do(t, "root", "POST", "/v1/quotas/unset", contract.QuotaRequest{Scope: "user", Name: "alice"}, &e); resp.StatusCode != 404 ||
		!strings.Contains(e.Error.Message, "user alice has no quota set through the server") {
		t.Errorf("unset again: %d %+v, want 404", resp.StatusCode, e)
	}
}

// GET /v1/usage: an admin is given every user's row, a user their own.
func TestUsageRoute(t *testing.T) {
	ts := newTestServer(t, Options{})
	var lr contract.LaunchResult
	if resp := ts.do(t, "alice", "POST", "/v1/jobs", contract.LaunchRequest{File: "t.yaml", Task: []byte("run: 'true'\nresources: {cloud: sim}\n")}, &lr); resp.StatusCode != 201 {
		t.Fatalf("launch: %d", resp.StatusCode)
	}
	if resp := ts.do(t, "bob", "POST", "/v1/jobs", contract.LaunchRequest{File: "t.yaml", Task: []byte("run: 'true'\nresources: {cloud: sim}\n")}, &lr); resp.StatusCode != 201 {
		t.Fatalf("launch: %d", resp.StatusCode)
	}
	var rows []contract.UsageView
	if resp := ts.do(t, "root", "GET", "/v1/usage", nil, &rows); resp.StatusCode != 200 || len(rows) != 2 {
		t.Fatalf("root: %d %+v, want alice's and bob's rows", resp.StatusCode, rows)
	}
	rows = nil
	if resp := ts.do(t, "bob", "GET", "/v1/usage", nil, &rows); resp.StatusCode != 200 || len(rows) != 1 || rows[0].User != "bob" {
		t.Fatalf("bob: %d %+v, want his own row alone", resp.StatusCode, rows)
	}
}
