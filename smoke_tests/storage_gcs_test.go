package smoke_tests

import (
	"context"
	"strings"
	"testing"

	"sortie/provision/bucket"
	"sortie/provision/bucket/gcstest"
)

// gcsEnv is a user's world whose Cloud Storage is a stand-in of the
// test's own on 127.0.0.1: the CLI, the controller and (on local) the
// nodes' sync program find it through STORAGE_EMULATOR_HOST.
func gcsEnv(t *testing.T) (*env, bucket.Store, *gcstest.Server) {
	t.Helper()
	f := gcstest.Start(t)
	vars := map[string]string{
		"STORAGE_EMULATOR_HOST": f.Host, "GOOGLE_CLOUD_PROJECT": "sortie-test",
		"GOOGLE_APPLICATION_CREDENTIALS": "",
	}
	var extra []string
	for k, v := range vars {
		extra = append(extra, k+"="+v)
		t.Setenv(k, v)
	}
	e := newEnv(t, extra...)
	st, err := bucket.NewGCS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return e, st, f
}

// The scenario on local with store: gcs.
func TestBucketCheckpointLocalGCS(t *testing.T) {
	e, st, _ := gcsEnv(t)
	checkpointScenario(t, e, st, "gcs")
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
