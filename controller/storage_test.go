package controller

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An EC2 node's sync program gets the store's endpoint, its region and
// the metadata service to take the instance role from; the controller's
// own keys never leave its machine.
func TestAWSStorageEnv(t *testing.T) {
	controllerEnv := map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "tok", "AWS_PROFILE": "me",
		"AWS_ENDPOINT_URL_S3": "http://minio:9000", "AWS_ENDPOINT_URL": "http://all:4566", "HOME": "/home/me",
	}
	got := awsStorageEnv(func(k string) string { return controllerEnv[k] }, "us-west-2", "http://127.0.0.1:1338")
	want := map[string]string{
		"AWS_REGION": "us-west-2", "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:1338",
		"AWS_ENDPOINT_URL_S3": "http://minio:9000", "AWS_ENDPOINT_URL": "http://all:4566",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	// On EC2 itself: the default metadata service, AWS's S3.
	got = awsStorageEnv(func(string) string { return "" }, "eu-west-1", "")
	if diff := cmp.Diff(map[string]string{"AWS_REGION": "eu-west-1"}, got); diff != "" {
		t.Errorf("env with nothing set (-want +got):\n%s", diff)
	}
}

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
`))
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
