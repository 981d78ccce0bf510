package smoke_tests

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"sortie/controller/clouds"
	"sortie/provision/bucket"
	"sortie/provision/bucket/gcstest"
)

// gcsEnv is a user's world whose Cloud Storage is a stand-in of the
// test's own on 127.0.0.1: the CLI, the controller and (on local) the
// nodes' sync program find it through STORAGE_EMULATOR_HOST. The project
// is named by config.yaml's gcp.project alone, where sortie makes buckets.
func gcsEnv(t *testing.T) (*env, bucket.Store, *gcstest.Server) {
	t.Helper()
	f := gcstest.Start(t)
	vars := map[string]string{
		"STORAGE_EMULATOR_HOST": f.Host, "GOOGLE_CLOUD_PROJECT": "", "CLOUDSDK_CORE_PROJECT": "", "GCLOUD_PROJECT": "",
		"GOOGLE_APPLICATION_CREDENTIALS": "",
	}
	var extra []string
	for k, v := range vars {
		extra = append(extra, k+"="+v)
		t.Setenv(k, v)
	}
	e := newEnv(t, extra...)
	e.config("gcp:\n  project: sortie-test\n")
	st, err := bucket.NewGCS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.Project = "sortie-test"
	t.Cleanup(func() { st.Close() })
	return e, st, f
}

// The scenario on local with store: gcs.
func TestBucketCheckpointLocalGCS(t *testing.T) {
	e, st, f := gcsEnv(t)
	checkpointScenario(t, e, st, checkpointCase{
		resources: "{cloud: local}", store: "gcs",
		preempt: func(id int64, _ string) {
			e.must("local", "preempt", strconv.FormatInt(id, 10), "--notice", "30s")
		},
	})
	if p := f.BucketProject("steps-ckpt"); p != "sortie-test" {
		t.Errorf("the bucket was made in project %q, want gcp.project's sortie-test", p)
	}
}

// A GCS bucket the launching credentials cannot read is refused at
// launch, the field and the bucket named, before a job is stored; so is a
// gs:// URL whose bucket does not exist, and a name GCS does not allow.
func TestBucketRefusedAtLaunchGCS(t *testing.T) {
	e, _, f := gcsEnv(t)
	f.Put("their-data", "x", []byte("x"))
	f.Deny("their-data")
	for file, wants := range map[string][]string{
		"read.yaml": {"file_mounts:\n  /data: gs://their-data/set\n  /gone: gs://no-such-bucket/x\nrun: \"true\"\n",
			`file_mounts./data: "their-data" cannot be read with your credentials`,
			`file_mounts./gone: "no-such-bucket" does not exist`},
		"name.yaml": {"file_mounts:\n  /ckpt: {name: goog-ckpts, store: gcs, mode: MOUNT_CACHED}\nrun: \"true\"\n",
			`file_mounts./ckpt.name: "goog-ckpts" is not a valid GCS bucket name`},
	} {
		r := e.run("jobs", "launch", "-d", e.write(file, wants[0]))
		if r.code == 0 {
			t.Fatalf("%s: launch succeeded:\n%s", file, r.stdout)
		}
		for _, want := range wants[1:] {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: launch output lacks %q:\n%s", file, want, r.stderr)
			}
		}
	}
	if out := e.must("jobs", "queue", "-o", "json").stdout; strings.Contains(out, `"id"`) {
		t.Errorf("a refused launch stored a job:\n%s", out)
	}
}

// sortie check's gcp section says what the credentials may do with Cloud
// Storage, as the sync program finds: with the stand-in, that the
// project's buckets are listed (and that an emulator has no IAM to ask);
// when the listing is refused, that tasks with GCS buckets cannot launch.
func TestCheckSaysWhatGCSAllows(t *testing.T) {
	e, _, f := gcsEnv(t)
	details := func() string {
		var checks []clouds.Check
		if err := json.Unmarshal([]byte(e.must("check", "-o", "json").stdout), &checks); err != nil {
			t.Fatal(err)
		}
		for _, c := range checks {
			if c.Cloud == "gcp" {
				return strings.Join(c.Details, "\n")
			}
		}
		t.Fatalf("no gcp section in %+v", checks)
		return ""
	}
	if got := details(); !strings.Contains(got, "buckets: project sortie-test: buckets listed at the emulator "+f.Host) {
		t.Errorf("gcp details:\n%s", got)
	}
	f.DenyProject("sortie-test")
	if got := details(); !strings.Contains(got, "buckets: cannot be listed, so tasks with GCS buckets cannot launch: ") ||
		!strings.Contains(got, "storage.buckets.list") {
		t.Errorf("gcp details with the listing refused:\n%s", got)
	}
}

// The dry run warns of a GCS bucket in a region other than the task's
// GCP placements, naming both, and not of one in the multi-region that
// holds the task's region; a new bucket is made in the attempt's region.
func TestDryRunWarnsOfAFarGCSBucket(t *testing.T) {
	e, st, _ := gcsEnv(t)
	// Compute Engine is an emulator's (never asked by a dry run), so that
	// gcp is enabled and the task's placements are planned.
	e.config("gcp:\n  project: sortie-test\n  endpoint: http://127.0.0.1:1\n")
	ctx := context.Background()
	if err := st.(*bucket.GCS).CreateIn(ctx, "far-gcs", "europe-west4"); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, "near-gcs"); err != nil { // the default: the multi-region US
		t.Fatal(err)
	}
	e.write("task.yaml", `resources: {cloud: gcp, region: us-central1, instance_type: n2-standard-2}
file_mounts:
  /data: gs://far-gcs/set
  /near: gs://near-gcs
run: ls /data
`)
	far, plan, _ := bucketWarnings(t, e, "task.yaml")
	if len(far) != 1 || !strings.Contains(far[0], "file_mounts./data: bucket far-gcs is in europe-west4") ||
		!strings.Contains(far[0], "may run in us-central1") {
		t.Errorf("warnings %q; want one, of far-gcs, naming europe-west4 and us-central1", plan)
	}
}
