package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuckets(t *testing.T) {
	p, err := Parse([]byte(`resources: {cloud: aws}
file_mounts:
  /data: s3://datasets/imagenet/
  /ckpt: {name: run-ckpts, mode: MOUNT_CACHED, source: ./init, persistent: false}
  /out: {name: outs}
  /in: {source: gs://shared-in/x, mode: COPY}
  /code: ./src
run: "true"
`), testClouds())
	if err != nil {
		t.Fatal(err)
	}
	got, probs := p.Tasks[0].Buckets("", testClouds())
	if len(probs) != 0 {
		t.Fatalf("problems: %v", probs)
	}
	want := []BucketMount{
		{Path: "/ckpt", Field: "file_mounts./ckpt", Store: "s3", Bucket: "run-ckpts", Mode: "MOUNT_CACHED", Source: "./init", Persistent: false, Create: true},
		{Path: "/data", Field: "file_mounts./data", Store: "s3", Bucket: "datasets", Prefix: "imagenet/", Mode: "COPY", Persistent: true},
		{Path: "/in", Field: "file_mounts./in", Store: "gcs", Bucket: "shared-in", Prefix: "x/", Mode: "COPY", Persistent: true},
		{Path: "/out", Field: "file_mounts./out", Store: "s3", Bucket: "outs", Mode: "MOUNT", Persistent: true, Create: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Buckets (-want +got):\n%s", diff)
	}
}

func TestBucketNameProblem(t *testing.T) {
	for _, c := range []struct {
		store, name string
		ok          bool
	}{
		{"s3", "my-bucket.v2", true},
		{"s3", "ab", false},
		{"s3", "My-Bucket", false},
		{"s3", "a_b-c", false},
		{"s3", "-abc", false},
		{"s3", "a..b", false},
		{"s3", "10.0.0.1", false},
		{"s3", "xn--abc", false},
		{"s3", "abc-s3alias", false},
		{"gcs", "my_bucket-1", true},
		{"gcs", "googbucket", false},
		{"gcs", "my-google-bucket", false},
		{"gcs", "a.-b", false},
		{"gcs", "abcdefghij.abcdefghij.abcdefghij.abcdefghij.abcdefghij.abcdefghij.abcdefghij", true},
		{"gcs", "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij", false},
	} {
		why := BucketNameProblem(c.store, c.name)
		if (why == "") != c.ok {
			t.Errorf("%s %q: problem %q, want valid %v", c.store, c.name, why, c.ok)
		}
	}
}

// The input key counts a storage mount's spec and its local source's
// content, never what the bucket holds.
func TestInputKeyStorage(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"init/a": "1"})
	task := func(mode string) *Task {
		p, err := Parse([]byte("file_mounts:\n  /ckpt: {name: ckpts, store: s3, mode: "+mode+", source: ./init}\nrun: \"true\"\n"), testClouds())
		if err != nil {
			t.Fatal(err)
		}
		return p.Tasks[0]
	}
	k1, err := InputKey(task("COPY"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := InputKey(task("COPY"), dir); k != k1 {
		t.Fatal("the same inputs gave two keys")
	}
	if k, _ := InputKey(task("MOUNT_CACHED"), dir); k == k1 {
		t.Error("a new mode kept the key")
	}
	writeTree(t, dir, map[string]string{"init/a": "2"})
	if k, _ := InputKey(task("COPY"), dir); k == k1 {
		t.Error("a changed source kept the key")
	}
}

// SkyPilot's string form of a bucket source means the dictionary form
// with source: URL and mode: COPY: the same bucket, copied to the same
// path, and no local path.
func TestBucketURLStringIsACopyMount(t *testing.T) {
	buckets := func(mounts string) []BucketMount {
		t.Helper()
		p, err := Parse([]byte("resources: {cloud: local}\nfile_mounts:\n  /inputs: "+mounts+"\nrun: \"true\"\n"), testClouds())
		if err != nil {
			t.Fatal(err)
		}
		got, probs := p.Tasks[0].Buckets("", testClouds())
		if len(probs) != 0 {
			t.Fatalf("%s: problems %v", mounts, probs)
		}
		return got
	}
	str, dict := buckets("s3://inputs/data"), buckets("{source: s3://inputs/data, mode: COPY}")
	if diff := cmp.Diff(dict, str); diff != "" {
		t.Errorf("string form against dictionary form (-dict +string):\n%s", diff)
	}
	if len(str) != 1 || str[0].Mode != ModeCopy || str[0].Bucket != "inputs" || str[0].Prefix != "data/" {
		t.Errorf("string form: %+v; want bucket inputs, prefix data/, COPY", str)
	}
	if !IsBucketURL("s3://inputs/data") || !IsBucketURL("gs://b") || IsBucketURL("./data") || IsBucketURL("/abs/s3:") {
		t.Error("IsBucketURL tells bucket URLs from local paths wrongly")
	}
}
