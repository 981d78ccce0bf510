package clouds_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"sortie/controller/clouds"
	"sortie/schema"
)

// Task files may name every cloud the registry holds, and the messages
// list them in its order.
func TestTaskFilesNameTheRegistrysClouds(t *testing.T) {
	cs := clouds.Schema()
	if err := cs.Check(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cs.Names(), ","); got != "local,sim,aws,gcp,kubernetes" {
		t.Errorf("Names() = %s", got)
	}
	_, err := schema.Parse([]byte("run: echo\nresources: {cloud: awz}\n"), cs)
	if err == nil || !strings.Contains(err.Error(), `did you mean "aws"?`) {
		t.Errorf("cloud: awz: %v", err)
	}
	_, err = schema.Parse([]byte("run: echo\nresources: {cloud: azure}\n"), cs)
	if err == nil || !strings.Contains(err.Error(), "sortie runs on local, aws, gcp, kubernetes") {
		t.Errorf("cloud: azure: %v", err)
	}
	p, err := schema.Parse([]byte("run: echo\nfile_mounts: {/data: {name: bucket-one}}\n"), cs)
	if err != nil {
		t.Fatal(err)
	}
	if _, probs := p.Tasks[0].Buckets("", cs); len(probs) != 1 || !strings.Contains(probs[0].Message, "only on aws and gcp)") {
		t.Errorf("a storage mount on local without a store: %v", probs)
	}
	p, err = schema.Parse([]byte("run: echo\nresources: {cloud: gcp}\nfile_mounts: {/data: {name: bucket-one}}\n"), cs)
	if err != nil {
		t.Fatal(err)
	}
	if ms, probs := p.Tasks[0].Buckets("", cs); len(probs) != 0 || len(ms) != 1 || ms[0].Store != schema.StoreGCS {
		t.Errorf("a storage mount on gcp without a store: %v %v", ms, probs)
	}
	for _, tc := range []struct{ yaml, cloud, region string }{
		{"resources: {region: us-east-1}", "aws", "us-east-1"},
		{"resources: {zone: us-east-1a}", "aws", "us-east-1"},
		{"resources: {zone: us-central1-a}", "gcp", "us-central1"},
		{"resources: {cloud: aws, zone: us-central1-a}", "aws", ""},
		{"resources: {infra: k8s/ctx/with/slashes}", "kubernetes", "ctx/with/slashes"},
	} {
		p, err := schema.Parse([]byte("run: echo\n"+tc.yaml+"\n"), cs)
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if r := p.Tasks[0].Resources; r.Cloud != tc.cloud || r.Region != tc.region {
			t.Errorf("%s: cloud %q region %q, want %q %q", tc.yaml, r.Cloud, r.Region, tc.cloud, tc.region)
		}
	}
}

// schema's tests read its fixtures with clouds of their own making; read
// with the registry's, every fixture gives the same pipeline or the same
// problems.
func TestSchemaFixturesReadTheSameWithTheRegistrysClouds(t *testing.T) {
	dir := filepath.Join("..", "..", "schema", "testdata")
	valid, _ := filepath.Glob(filepath.Join(dir, "valid", "*.yaml"))
	invalid, _ := filepath.Glob(filepath.Join(dir, "invalid", "*.yaml"))
	if len(valid) == 0 || len(invalid) == 0 {
		t.Fatal("no fixtures found")
	}
	read := func(t *testing.T, name string) []byte {
		t.Helper()
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, file := range valid {
		p, err := schema.Parse(read(t, file), clouds.Schema())
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		var want schema.Pipeline
		if err := json.Unmarshal(read(t, strings.TrimSuffix(file, ".yaml")+".json"), &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&want, p, cmpopts.IgnoreFields(schema.Pipeline{}, "Warnings")); diff != "" {
			t.Errorf("%s (-fixture +registry's clouds):\n%s", file, diff)
		}
	}
	for _, file := range invalid {
		_, err := schema.Parse(read(t, file), clouds.Schema())
		var ve *schema.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: %v, want problems", file, err)
			continue
		}
		want := strings.TrimRight(string(read(t, strings.TrimSuffix(file, ".yaml")+".errors")), "\n")
		if diff := cmp.Diff(want, ve.Error()); diff != "" {
			t.Errorf("%s (-fixture +registry's clouds):\n%s", file, diff)
		}
	}
}
