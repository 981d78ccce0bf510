package controller

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sortie/controller/clouds"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"strings"
	"testing"
)

// A storage mount's new bucket is made in the attempt's region where its
// store is that cloud's (S3 on aws, GCS on gcp), and GCS buckets in
// gcp.project; elsewhere the store's default decides.
func TestPrepareBucketsMakesThemInTheAttemptsRegion(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	prog := filepath.Join(dir, "sortie-sync")
	if err := os.WriteFile(prog, []byte("#!/bin/bash\necho \"$*\" >>"+calls+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(node.SyncEnv, prog)
	c := newTestController(t, &fakeCloud{clusters: map[string]*provision.Cluster{}})
	c.Config.GCP.Project = "proj"
	p, err := schema.Parse([]byte(`file_mounts:
  /s3: {name: ckpt-s3, store: s3, mode: MOUNT_CACHED}
  /gcs: {name: ckpt-gcs, store: gcs, mode: MOUNT_CACHED}
run: "true"
`), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	for _, c2 := range []struct {
		cloud, region string
		want          []string
	}{
		{"aws", "us-west-2", []string{
			"ensure -store gcs -bucket ckpt-gcs -prefix  -create -project proj",
			"ensure -store s3 -bucket ckpt-s3 -prefix  -create -region us-west-2"}},
		{"gcp", "europe-west4", []string{
			"ensure -store gcs -bucket ckpt-gcs -prefix  -create -region europe-west4 -project proj",
			"ensure -store s3 -bucket ckpt-s3 -prefix  -create"}},
		{"local", "local", []string{
			"ensure -store gcs -bucket ckpt-gcs -prefix  -create -project proj",
			"ensure -store s3 -bucket ckpt-s3 -prefix  -create"}},
	} {
		os.Remove(calls)
		problem, err := c.prepareBuckets(context.Background(), &store.Job{}, &store.Attempt{Cloud: c2.cloud, Region: c2.region}, p.Tasks[0])
		if err != nil || problem != "" {
			t.Fatalf("%s: %q, %v", c2.cloud, problem, err)
		}
		b, _ := os.ReadFile(calls)
		got := strings.Split(strings.TrimSpace(string(b)), "\n")
		if strings.Join(slices.Sorted(slices.Values(got)), "\n") != strings.Join(c2.want, "\n") {
			t.Errorf("%s: the sync program was asked\n%s\nwant\n%s", c2.cloud, strings.Join(slices.Sorted(slices.Values(got)), "\n"), strings.Join(c2.want, "\n"))
		}
	}
}
