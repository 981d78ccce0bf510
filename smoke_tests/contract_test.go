package smoke_tests

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/api"
	"sortie/controller/lifecycle"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/contract")

// contractMasks are the fields whose values vary from run to run, or are
// prose rather than contract; their strings become placeholders, so the
// golden files still show string against null.
var contractMasks = map[string]string{
	"cluster":        "<cluster>",
	"instance_ids":   "<instance-id>",
	"input_key":      "<input-key>",
	"status_reason":  "<text>",
	"failure_reason": "<text>",
	"reason":         "<text>",
	"decision":       "<text>",
	"message":        "<text>",
}

// TestContractQueueAndShowJSON holds `jobs queue -a -o json` and `jobs show
// ID -o json` to the OpenAPI document's schemas (api.OpenAPI, made from
// package controller/contract) and to golden files. It reads the output as
// plain JSON, not through the Go types the schemas are made from.
func TestContractQueueAndShowJSON(t *testing.T) {
	objs := loadOpenAPI(t)
	e := newEnv(t, "SORTIE_USER=alice")

	// Job 1: launched while local-a has no capacity (a launch try), then
	// preempted and recovered.
	e.must("local", "capacity", "local/local-a", "off")
	started := filepath.Join(e.dir, "spot-started")
	spot := e.launch(e.write("spot.yaml", `
name: spot
run: |
  if [ "$SORTIE_ATTEMPT" = 1 ]; then touch `+started+`; sleep 300; fi
`))
	waitFile(t, started)
	waitJSONStatus(e, spot, "RUNNING")
	e.must("local", "capacity", "local/local-a", "on")
	e.must("local", "preempt", strconv.FormatInt(spot, 10))

	// Job 2: a pipeline that fails at its second task; the third never runs.
	pipeline := e.launch(e.write("pipeline.yaml", etlPipeline))
	// Job 3 fails; job 5 retries it with the override that fixes it.
	retried := e.launch(e.write("fixme.yaml", "name: fixme\nrun: '[ \"$FIX\" = 1 ] || exit 4'\n"))
	// Job 4: node 1 fails, sortie stops node 0, whose exit code is unknown.
	twoNodes := e.launch(e.write("two-nodes.yaml", `
name: two-nodes
num_nodes: 2
run: |
  if [ "$SORTIE_NODE_RANK" = 1 ]; then exit 3; fi
  sleep 300
`))
	waitJSONStatus(e, retried, "FAILED")
	retryOut := e.must("jobs", "retry", strconv.FormatInt(retried, 10), "--reason", "flaky", "--set", "envs.FIX=1", "-o", "json").stdout
	retry := retryID(e, retryOut)
	// Job 6 fails and keeps its cluster (keep_on_failure); then it is
	// released.
	kept := e.launch(e.write("kept.yaml", "name: kept\nresources: {job_recovery: {keep_on_failure: 1h}}\nrun: exit 5\n"))

	ids := []int64{spot, pipeline, retried, twoNodes, retry, kept}
	if fmt.Sprint(ids) != "[1 2 3 4 5 6]" {
		t.Fatalf("job ids %v; the golden files expect 1 to 6 in launch order", ids)
	}
	final := map[int64]string{spot: "SUCCEEDED", pipeline: "FAILED", retried: "FAILED", twoNodes: "FAILED", kept: "FAILED", retry: "SUCCEEDED"}
	for _, id := range ids {
		waitJSONStatus(e, id, final[id])
	}
	release := e.must("jobs", "release", strconv.FormatInt(kept, 10), "-o", "json").stdout
	waitReleased(e, kept)

	c := newConformer(objs, contractMasks)
	// The other verbs' -o json, held to their schemas without golden files.
	c.conform("retry", "retry", decodeJSON(t, retryOut), listOf(ref("retry_result")))
	c.conform("release", "release", decodeJSON(t, release), ref("release"))
	failures := decodeJSON(t, e.must("jobs", "failures", "-o", "json").stdout)
	if l, _ := failures.([]any); len(l) == 0 {
		t.Errorf("jobs failures -o json lists no failure: %v", failures)
	}
	c.conform("failures", "failures", failures, listOf(ref("failure")))
	queue := decodeJSON(t, e.must("jobs", "queue", "-a", "-o", "json").stdout)
	q := c.conform("queue", "queue", queue, listOf(ref("job")))
	if l, ok := q.([]any); ok {
		sortBy(l, "id")
	}
	goldens := map[string]any{"queue.json": q}
	shows := map[int64]any{}
	names := map[int64]string{spot: "preempted", pipeline: "pipeline", retried: "retried", twoNodes: "unknown-exit-code", kept: "kept", retry: "retry"}
	for _, id := range ids {
		raw := decodeJSON(t, e.must("jobs", "show", strconv.FormatInt(id, 10), "-o", "json").stdout)
		shows[id] = raw
		s := c.conform(fmt.Sprintf("show(%d)", id), "show", raw, ref("show"))
		if m, ok := s.(map[string]any); ok {
			if l, ok := m["attempts"].([]any); ok {
				sortBy(l, "task", "attempt")
			}
			if l, ok := m["launch_tries"].([]any); ok {
				sortBy(l, "task", "attempt", "round", "region", "zone")
			}
		}
		goldens[fmt.Sprintf("show-%d-%s.json", id, names[id])] = s
	}
	c.report(t)

	// What the scenario is for, so that -update cannot bless a run that
	// missed it.
	for _, w := range []struct {
		id   int64
		path string
		want string
	}{
		{spot, "attempts.0.outcome", `"preempted"`},
		{spot, "attempts.0.exit_codes", `[null]`},
		{spot, "launch_tries.0.class", `"capacity"`},
		{pipeline, "num_tasks", `3`},
		{pipeline, "tasks.2.started_at", `null`},
		{retried, "retries", `[5]`},
		{retried, "retried_in", `5`},
		{kept, "attempts.0.released_reason", `"released by user (jobs release)"`},
		{retry, "retry_of", `3`},
		{retry, "root_id", `3`},
		{retry, "overrides.0.path", `"envs.FIX"`},
		{twoNodes, "exit_codes", `[null,3]`},
		{twoNodes, "attempts.0.exit_codes", `[null,3]`},
	} {
		got, err := json.Marshal(dig(shows[w.id], w.path))
		if err != nil || string(got) != w.want {
			t.Errorf("show %d: %s is %s, want %s", w.id, w.path, got, w.want)
		}
	}

	files := make([]string, 0, len(goldens))
	for f := range goldens {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		compareGolden(t, filepath.Join("testdata", "contract", f), goldens[f])
	}
}

// TestContractAPIAnswers holds the answers of `sortie server` to the
// schemas its OpenAPI document gives each route, and the CLI's -o json
// through the server to the same schemas; the document it serves is
// api.OpenAPI.
func TestContractAPIAnswers(t *testing.T) {
	objs := loadOpenAPI(t)
	s := startServer(t)
	alice, token := s.user("alice", false)
	get := func(path string) string {
		t.Helper()
		req, err := http.NewRequest("GET", s.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v\n%s", path, resp.Status, err, b)
		}
		return string(b)
	}
	if served := decodeJSON(t, get("/v1/openapi.json")); !cmp.Equal(served, decodeJSON(t, string(api.OpenAPI))) {
		t.Errorf("the server's /v1/openapi.json is not api.OpenAPI")
	}

	id := alice.launch(alice.write("fail.yaml", "resources: {cloud: local}\nrun: echo bad; exit 3\n"))
	alice.waitStatus(id, lifecycle.Failed)
	// A quota of each kind of count, for GET /v1/quotas.
	s.must("server", "quotas", "set", "--group", "ml", "--members", "alice,bob", "--gpu", "A100=4", "--running-jobs", "3")
	s.must("server", "quotas", "set", "--server")
	c := newConformer(objs, contractMasks)
	for _, r := range []struct{ route, path string }{
		{"GET /v1/me", "/v1/me"},
		{"GET /v1/quotas", "/v1/quotas"},
		{"GET /v1/usage", "/v1/usage"},
		{"GET /v1/jobs", "/v1/jobs?all=true"},
		{"GET /v1/jobs/{id}", fmt.Sprintf("/v1/jobs/%d", id)},
		{"GET /v1/failures", "/v1/failures"},
	} {
		sch, err := objs.answer(r.route, "200", "application/json")
		if err != nil {
			t.Fatal(err)
		}
		c.conform(r.route, r.route, decodeJSON(t, get(r.path)), sch)
	}
	sch, err := objs.answer("GET /v1/jobs/{id}/logs", "200", "application/x-ndjson")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(get(fmt.Sprintf("/v1/jobs/%d/logs", id))), "\n")
	if len(lines) < 2 {
		t.Errorf("the log stream has %d lines, want the log and its end", len(lines))
	}
	for i, l := range lines {
		c.conform(fmt.Sprintf("logs[%d]", i), "GET /v1/jobs/{id}/logs", decodeJSON(t, l), sch)
	}

	c.conform("queue", "queue", decodeJSON(t, alice.must("jobs", "queue", "-a", "-o", "json").stdout), listOf(ref("job")))
	c.conform("show", "show", decodeJSON(t, alice.must("jobs", "show", strconv.FormatInt(id, 10), "-o", "json").stdout), ref("show"))
	c.conform("failures", "failures", decodeJSON(t, alice.must("jobs", "failures", "-o", "json").stdout), listOf(ref("failure")))
	c.conform("quotas", "quotas", decodeJSON(t, alice.must("server", "quotas", "-o", "json").stdout), listOf(ref("quota")))
	c.conform("usage", "usage", decodeJSON(t, alice.must("server", "usage", "-o", "json").stdout), listOf(ref("usage")))
	c.report(t)
}

// waitJSONStatus polls `jobs show` until the job has the status, failing
// if it ends in another.
func waitJSONStatus(e *env, id int64, status string) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		last = e.must("jobs", "show", strconv.FormatInt(id, 10), "-o", "json").stdout
		got, _ := dig(decodeJSON(e.t, last), "status").(string)
		if got == status {
			return
		}
		if lifecycle.Status(got).Terminal() {
			e.t.Fatalf("job %d ended %s, want %s:\n%s", id, got, status, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("job %d: waited for %s; last seen:\n%s", id, status, last)
}

// waitReleased waits until job id's kept cluster is released.
func waitReleased(e *env, id int64) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		last = e.must("jobs", "show", strconv.FormatInt(id, 10), "-o", "json").stdout
		if dig(decodeJSON(e.t, last), "attempts.0.released_at") != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("job %d: its kept cluster was not released within 30s; last seen:\n%s", id, last)
}

// retryID reads the new job's id from `jobs retry -o json`.
func retryID(e *env, out string) int64 {
	e.t.Helper()
	n, _ := dig(decodeJSON(e.t, out), "0.retry.id").(json.Number)
	id, err := n.Int64()
	if err != nil {
		e.t.Fatalf("retry -o json: no retry.id in\n%s", out)
	}
	return id
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	if d.More() {
		t.Fatalf("more than one JSON value:\n%s", s)
	}
	return v
}

// dig follows a dotted path of object keys and list indexes.
func dig(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// sortBy orders a list of objects by the given fields, numbers as numbers.
func sortBy(l []any, keys ...string) {
	sort.SliceStable(l, func(i, j int) bool {
		for _, k := range keys {
			a, b := dig(l[i], k), dig(l[j], k)
			an, aok := a.(json.Number)
			bn, bok := b.(json.Number)
			if aok && bok {
				af, _ := an.Float64()
				bf, _ := bn.Float64()
				if af != bf {
					return af < bf
				}
				continue
			}
			if as, bs := fmt.Sprint(a), fmt.Sprint(b); as != bs {
				return as < bs
			}
		}
		return false
	})
}

func encodeGolden(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// compareGolden compares v, encoded with sorted keys, with the golden file,
// or rewrites the file under -update.
func compareGolden(t *testing.T, path string, v any) {
	t.Helper()
	got := encodeGolden(v)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v (go test ./smoke_tests -run Contract -update writes it)", err)
		return
	}
	if bytes.Equal(want, got) {
		return
	}
	diff := cmp.Diff(decodeJSON(t, string(want)), decodeJSON(t, string(got)))
	if diff == "" {
		diff = "(same values, different text)"
	}
	t.Errorf("%s differs from the output (-golden +output); if the change is meant, run go test ./smoke_tests -run Contract -update and describe the field in controller/contract/docs.go:\n%s", path, diff)
}
