package gcpfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: not JSON: %s", url, b)
	}
	return resp.StatusCode, doc
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, doc
}

// The answers have the API's JSON shapes, read here without the client
// library: int64 fields as strings, aggregated lists keyed by scope with
// a warning on empty scopes, and failed operations with error.errors.
func TestJSONShapes(t *testing.T) {
	s := New(t, Options{})
	base := s.URL + "/compute/v1/projects/sortie-test/"
	const vm = `{"name": "vm-1", "machineType": "zones/us-central1-a/machineTypes/e2-standard-2",
		"labels": {"sortie-managed": "true"},
		"disks": [{"boot": true, "initializeParams": {"sourceImage": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts", "diskSizeGb": "50"}}],
		"networkInterfaces": [{"accessConfigs": [{"type": "ONE_TO_ONE_NAT"}]}]}`
	code, op := post(t, base+"zones/us-central1-a/instances?requestId=00000000-0000-5000-8000-000000000001", vm)
	if code != 200 || op["status"] != "RUNNING" || op["operationType"] != "insert" {
		t.Fatalf("insert = %d %v", code, op)
	}
	if _, ok := op["targetId"].(string); !ok {
		t.Errorf("targetId %v (%T), want a string", op["targetId"], op["targetId"])
	}

	_, list := get(t, base+"aggregated/instances?filter="+strings.ReplaceAll(`labels.sortie-managed = "true"`, " ", "%20"))
	items := list["items"].(map[string]any)
	scoped := items["zones/us-central1-a"].(map[string]any)
	insts := scoped["instances"].([]any)
	if len(insts) != 1 {
		t.Fatalf("aggregated list: %v", list)
	}
	in := insts[0].(map[string]any)
	if _, ok := in["id"].(string); !ok || in["status"] != "RUNNING" {
		t.Errorf("instance id %v (%T) status %v, want a string id and RUNNING", in["id"], in["id"], in["status"])
	}
	nat := in["networkInterfaces"].([]any)[0].(map[string]any)["accessConfigs"].([]any)[0].(map[string]any)["natIP"]
	if nat != "127.0.0.1" {
		t.Errorf("natIP %v", nat)
	}
	if w := items["zones/us-east1-b"].(map[string]any)["warning"].(map[string]any); w["code"] != "NO_RESULTS_ON_PAGE" {
		t.Errorf("empty scope warning %v", w)
	}

	s.SetCapacity("us-east1-b", false)
	_, op = post(t, base+"zones/us-east1-b/instances", strings.Replace(vm, "us-central1-a", "us-east1-b", 1))
	_, done := get(t, base+"zones/us-east1-b/operations/"+op["name"].(string))
	errs := done["error"].(map[string]any)["errors"].([]any)
	if done["status"] != "DONE" || errs[0].(map[string]any)["code"] != "ZONE_RESOURCE_POOL_EXHAUSTED" {
		t.Errorf("stocked-out insert's operation: %v", done)
	}

	code, e := get(t, base+"zones/us-central1-a/instances/nope")
	reason := e["error"].(map[string]any)["errors"].([]any)[0].(map[string]any)["reason"]
	if code != 404 || reason != "notFound" {
		t.Errorf("get of a missing VM = %d %v", code, e)
	}
	code, e = post(t, base+"zones/us-central1-a/instances", strings.Replace(vm, "e2-standard-2", "z9-huge", 1))
	if code != 400 || !strings.Contains(e["error"].(map[string]any)["message"].(string), "Machine type with name 'z9-huge' does not exist") {
		t.Errorf("insert of an unknown machine type = %d %v", code, e)
	}
	if got := s.Calls("instances.insert"); got != 3 {
		t.Errorf("%d inserts counted, want 3", got)
	}
}

func TestFilters(t *testing.T) {
	for _, tc := range []struct {
		filter string
		doc    map[string]any
		want   bool
	}{
		{`labels.a = "x"`, map[string]any{"labels": map[string]any{"a": "x"}}, true},
		{`labels.a = "x"`, map[string]any{"labels": map[string]any{"a": "y"}}, false},
		{`labels.a=x`, map[string]any{"labels": map[string]any{"a": "x"}}, true},
		{`(status = "RUNNING") (labels.a = "x")`, map[string]any{"status": "RUNNING", "labels": map[string]any{"a": "x"}}, true},
		{`(status = "RUNNING") AND (labels.a = "x")`, map[string]any{"status": "TERMINATED", "labels": map[string]any{"a": "x"}}, false},
		{`(operationType = "compute.instances.preempted") OR (operationType = "delete")`, map[string]any{"operationType": "delete"}, true},
		{`(operationType = "compute.instances.preempted") OR (operationType = "delete")`, map[string]any{"operationType": "insert"}, false},
		{`name eq "sortie-.*"`, map[string]any{"name": "sortie-1-0-1-0"}, true},
		{`name ne "sortie-.*"`, map[string]any{"name": "sortie-1-0-1-0"}, false},
		{`status != "RUNNING"`, map[string]any{}, true},
	} {
		f, err := parseFilter(tc.filter)
		if err != nil {
			t.Errorf("%s: %v", tc.filter, err)
			continue
		}
		if got := f.matchDoc(tc.doc); got != tc.want {
			t.Errorf("%s on %v = %v, want %v", tc.filter, tc.doc, got, tc.want)
		}
	}
	if _, err := parseFilter(`labels.a ~ x`); err == nil {
		t.Error("a filter the fake cannot parse was accepted")
	}
}

// An insert's service account is an email or default, with scopes that
// are Google's auth URLs, as the API checks.
func TestServiceAccountsChecked(t *testing.T) {
	s := New(t, Options{})
	base := s.URL + "/compute/v1/projects/sortie-test/zones/us-central1-a/instances"
	vm := func(name, sa string) string {
		return `{"name": "` + name + `", "machineType": "zones/us-central1-a/machineTypes/e2-standard-2",
		"disks": [{"boot": true, "initializeParams": {"sourceImage": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts"}}],
		"networkInterfaces": [{}], "serviceAccounts": [` + sa + `]}`
	}
	for _, c := range []struct {
		sa   string
		code int
	}{
		{`{"email": "default", "scopes": ["https://www.googleapis.com/auth/devstorage.read_write"]}`, 200},
		{`{"email": "ck@p.iam.gserviceaccount.com", "scopes": ["https://www.googleapis.com/auth/devstorage.read_write"]}`, 200},
		{`{"email": "ckpts", "scopes": []}`, 400},
		{`{"email": "default", "scopes": ["devstorage.read_write"]}`, 400},
	} {
		if code, doc := post(t, base, vm(fmt.Sprintf("vm-%d", s.Calls("instances.insert")), c.sa)); code != c.code {
			t.Errorf("insert with %s = %d %v; want %d", c.sa, code, doc, c.code)
		}
	}
}
