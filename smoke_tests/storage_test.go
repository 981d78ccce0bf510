package smoke_tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"sortie/provision/aws"
	"sortie/provision/bucket"
	"sortie/provision/cloudtest"
)

// s3Env is a user's world whose stores are moto's S3: the CLI, the
// controller and (on local) the nodes' sync program find it through the
// standard settings.
func s3Env(t *testing.T) (*env, bucket.Store) {
	t.Helper()
	m := cloudtest.StartMoto(t)
	st := s3Store(t, m.URL)
	e := newEnv(t, "AWS_ENDPOINT_URL_S3="+m.URL, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_REGION=us-east-1", "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_CONFIG_FILE="+os.DevNull)
	return e, st
}

// s3Store is the test's own view of the S3 at endpoint, to look into the
// buckets; the environment it sets is the test process's only.
func s3Store(t *testing.T, endpoint string) bucket.Store {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_S3": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
		"AWS_REGION": "us-east-1", "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_CONFIG_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	st, err := bucket.NewS3(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// stepsTask writes step-1 … step-5 into a MOUNT_CACHED bucket at
// checkpoints, starting after the last step it finds there; attempt 1
// stops after step 3 (touching ready) until a notice stops it (then it
// touches stopped). scratch is a persistent: false bucket.
func stepsTask(resources, ready, stopped, store, ckpt, scratch string) string {
	return `resources: ` + resources + `
file_mounts:
  checkpoints: {name: ` + ckpt + `, store: ` + store + `, mode: MOUNT_CACHED}
  scratch: {name: ` + scratch + `, store: ` + store + `, mode: MOUNT_CACHED, persistent: false}
run: |
  start=1
  for i in 1 2 3 4 5; do [ -f checkpoints/step-$i ] && start=$((i+1)); done
  echo "attempt $SORTIE_ATTEMPT starts at step $start"
  echo tmp > scratch/tmp
  for i in $(seq $start 5); do
    echo "$i" > checkpoints/step-$i
    if [ "$i" = 3 ] && [ "$SORTIE_ATTEMPT" = 1 ]; then
      trap 'echo "stopped after step 3"; touch ` + stopped + `; exit 143' TERM
      touch ` + ready + `
      while :; do sleep 0.05; done
    fi
  done
`
}

// checkpointCase is one cloud's part of the checkpoint scenario.
type checkpointCase struct {
	resources string // the task's resources, a YAML flow mapping
	store     string // s3 (when empty) or gcs
	// preempt gives the first attempt a preemption notice; stopped
	// appears once its task has heard it.
	preempt func(id int64, stopped string)
}

// checkpointScenario is the scenario: attempt 1 writes steps 1-3
// and is preempted with a notice; its last upload runs before its exit
// code, so attempt 2, on a new cluster with an empty directory, downloads
// steps 1-3, starts at step 4 and succeeds; the bucket holds step 5, and
// the persistent: false bucket is gone.
func checkpointScenario(t *testing.T, e *env, st bucket.Store, c checkpointCase) {
	t.Helper()
	ready, stopped := filepath.Join(e.dir, "ready"), filepath.Join(e.dir, "stopped")
	store, scheme := "s3", "s3"
	if c.store == "gcs" {
		store, scheme = "gcs", "gs"
	}
	id := e.launch(e.write("task.yaml", stepsTask(c.resources, ready, stopped, store, "steps-ckpt", "steps-scratch")))
	waitFile(t, ready)
	e.waitStatus(id, "RUNNING")
	c.preempt(id, stopped)
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 2 || deref(d.Attempts[0].Outcome) != "preempted" {
		t.Fatalf("attempts %+v; want 2, the first preempted", d.Attempts)
	}
	if d.Attempts[0].Cluster == d.Attempts[1].Cluster {
		t.Errorf("attempt 2 ran on attempt 1's cluster %s", d.Attempts[0].Cluster)
	}
	logs := e.must("jobs", "logs", strconv.FormatInt(id, 10), "--attempt", "2").stdout
	if !strings.Contains(logs, "attempt 2 starts at step 4") {
		t.Errorf("attempt 2 did not start at step 4; its log:\n%s", logs)
	}
	objs, err := st.List(context.Background(), "steps-ckpt", "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	sort.Strings(keys)
	if want := "step-1 step-2 step-3 step-4 step-5"; strings.Join(keys, " ") != want {
		t.Errorf("bucket holds %v, want %s", keys, want)
	}
	// Deleted as the job's end is wrapped up, just after its status.
	gone := false
	for range 100 {
		ok, err := st.Exists(context.Background(), "steps-scratch")
		if err != nil {
			t.Fatal(err)
		}
		if gone = !ok; gone {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !gone {
		t.Error("the persistent: false bucket is still there 10s after the job ended")
	}
	show := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(show, "Buckets:") || !strings.Contains(show, scheme+"://steps-ckpt") {
		t.Errorf("jobs show lacks the buckets:\n%s", show)
	}
}

// On local with S3, the notice from `sortie local preempt --notice`.
func TestBucketCheckpointLocalS3(t *testing.T) {
	e, st := s3Env(t)
	checkpointScenario(t, e, st, checkpointCase{
		resources: "{cloud: local}",
		preempt: func(id int64, _ string) {
			e.must("local", "preempt", strconv.FormatInt(id, 10), "--notice", "30s")
		},
	})
}

// On aws against moto (EC2, IAM and S3), with the private sshd playing
// every instance: the instances get sortie's instance profile, which
// sortie makes; each node's sync program takes the role's credentials
// from the instance metadata service (AWS's simulator, through
// aws.imds_endpoint, which the controller passes to it with the region
// and the S3 endpoint), and the spot interruption notice comes from there
// too, shown once the task is at step 3 and hidden once it has been heard.
func TestBucketCheckpointAWSS3(t *testing.T) {
	e := newAWSEnv(t)
	st := s3Store(t, e.moto.URL)
	imds := startIMDSGate(t)
	cfg, err := os.ReadFile(filepath.Join(e.home, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// In us-west-2, where the controller's S3 client (us-east-1) is not.
	conf := strings.Replace(string(cfg), "aws:\n", "aws:\n  imds_endpoint: "+imds.URL+"\n", 1)
	e.config(strings.Replace(conf, "regions: [us-east-1]", "regions: [us-west-2]", 1))
	checkpointScenario(t, e.env, st, checkpointCase{
		resources: "{cloud: aws, region: us-west-2, instance_type: t3.micro, use_spot: true}",
		preempt: func(_ int64, stopped string) {
			// The running instance has sortie's profile (moto forgets it
			// once an instance is terminated).
			raw, err := cloudtest.Call(context.Background(), e.moto.URL, "us-west-2", "DescribeInstances", nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(raw), "instance-profile/"+aws.NodeProfileName); n != 1 {
				t.Errorf("%d instances have the profile %s, want attempt 1's", n, aws.NodeProfileName)
			}
			imds.notice(true)
			waitFile(t, stopped)
			imds.notice(false)
		},
	})
	if imds.credentialCalls() == 0 {
		t.Error("no node asked the instance metadata service for the role's credentials")
	}
	// The storage mount's new bucket was made where the cluster is.
	if r, ok, err := st.(*bucket.S3).Region(context.Background(), "steps-ckpt"); err != nil || !ok || r != "us-west-2" {
		t.Errorf("steps-ckpt is in %q (%v, %v), want us-west-2, the cluster's region", r, ok, err)
	}
	e.must("controller", "stop")
	if live := cloudtest.LiveInstances(t, e.moto.URL, "us-west-2"); len(live) != 0 {
		t.Errorf("instances left running: %v", live)
	}
}

// The dry run warns of an S3 bucket in another region than the task's
// AWS placements, naming both regions, and still passes the file; a
// bucket in the task's region, or a storage mount sortie will create,
// draws no warning.
func TestDryRunWarnsOfAFarBucket(t *testing.T) {
	e, st := s3Env(t)
	s3c := st.(*bucket.S3).Client
	if _, err := s3c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: awssdk.String("far-data"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraintEuWest1}},
		func(o *s3.Options) { o.Region = "eu-west-1" }); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(context.Background(), "near-data"); err != nil {
		t.Fatal(err)
	}
	e.write("task.yaml", `resources: {cloud: aws, region: us-east-1, instance_type: t3.micro}
file_mounts:
  /data: s3://far-data/imagenet
  /near: s3://near-data
  /ckpt: {name: new-ckpts, store: s3, mode: MOUNT_CACHED}
run: ls /data
`)
	far, plan, r := bucketWarnings(t, e, "task.yaml")
	if len(far) != 1 || !strings.Contains(far[0], "file_mounts./data") || !strings.Contains(far[0], "far-data is in eu-west-1") ||
		!strings.Contains(far[0], "may run in us-east-1") {
		t.Errorf("warnings %q; want one, of far-data, naming eu-west-1 and us-east-1", plan)
	}
	if !strings.Contains(r.stderr, "warning: file_mounts./data: bucket far-data is in eu-west-1") {
		t.Errorf("stderr lacks the warning: %q", r.stderr)
	}
}

// bucketWarnings runs a dry run of file and returns the plan's warnings
// of buckets, all its warnings, and the run.
func bucketWarnings(t *testing.T, e *env, file string) (far, all []string, r result) {
	t.Helper()
	r = e.run("jobs", "launch", "--dry-run", file, "-o", "json")
	if r.code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var plan struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	for _, w := range plan.Warnings {
		if strings.Contains(w, "bucket") {
			far = append(far, w)
		}
	}
	return far, plan.Warnings, r
}

// SkyPilot's several local sources for one bucket, run for real on local
// with moto's S3: each source is uploaded into the bucket under its base
// name before the task starts (a file as NAME, a directory as NAME/...),
// "~" being the launching user's home, and the node sees them there.
func TestSeveralSourcesForOneBucket(t *testing.T) {
	home := t.TempDir()
	m := cloudtest.StartMoto(t)
	st := s3Store(t, m.URL)
	e := newEnv(t, "AWS_ENDPOINT_URL_S3="+m.URL, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_REGION=us-east-1", "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_CONFIG_FILE="+os.DevNull, "HOME="+home)
	for path, body := range map[string]string{"mydir/myfile.txt": "my file\n", "datasets/a.csv": "a,1\n", "datasets/sub/b.csv": "b,2\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, path), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const several = `file_mounts:
  data:
    name: several-sources
    store: s3
    source: [~/mydir/myfile.txt, ~/datasets]
    mode: COPY
run: cat data/myfile.txt data/datasets/a.csv data/datasets/sub/b.csv
`
	task := e.write("several.yaml", several)
	d := e.run("jobs", "launch", "--dry-run", task)
	if d.code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
	id := e.launch(task)
	e.waitStatus(id, "SUCCEEDED")
	if logs := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout; !strings.Contains(logs, "my file\na,1\nb,2\n") {
		t.Errorf("the task did not read both sources from the bucket:\n%s", logs)
	}
	objs, err := st.List(context.Background(), "several-sources", "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		if !strings.HasPrefix(o.Key, bucket.MarkerPrefix) {
			keys = append(keys, o.Key)
		}
	}
	sort.Strings(keys)
	if want := "datasets/a.csv datasets/sub/b.csv myfile.txt"; strings.Join(keys, " ") != want {
		t.Errorf("the bucket holds %v, want %s", keys, want)
	}

	// A source that is not there is refused before anything is stored,
	// naming its place in the list.
	r := e.run("jobs", "launch", "-d", e.write("missing.yaml", strings.Replace(several, "~/datasets]", "~/datasets, ~/nothing-here]", 1)))
	if r.code != 2 || !strings.Contains(r.stderr, "file_mounts.data.source[2]") {
		t.Errorf("a missing source: exit %d\n%s", r.code, r.stderr)
	}
}
