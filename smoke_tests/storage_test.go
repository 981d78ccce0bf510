package smoke_tests

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/provision/bucket"
	"sortie/provision/cloudtest"
)

// s3Env is a user's world whose stores are moto's S3: the CLI, the
// controller and (on local) the nodes' sync program find it through the
// standard settings.
func s3Env(t *testing.T) (*env, bucket.Store) {
	t.Helper()
	m := cloudtest.StartMoto(t)
	vars := map[string]string{
		"AWS_ENDPOINT_URL_S3": m.URL, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
		"AWS_REGION": "us-east-1", "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_CONFIG_FILE": os.DevNull,
	}
	var extra []string
	for k, v := range vars {
		extra = append(extra, k+"="+v)
		t.Setenv(k, v)
	}
	e := newEnv(t, extra...)
	st, err := bucket.NewS3(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e, st
}

// stepsTask writes step-1 … step-5 into a MOUNT_CACHED bucket at
// checkpoints, starting after the last step it finds there; attempt 1
// stops after step 3 (touching ready) until a notice stops it. scratch is
// a persistent: false bucket.
func stepsTask(ready, store, ckpt, scratch string) string {
	return `resources: {cloud: local}
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
      trap 'echo "stopped after step 3"; exit 143' TERM
      touch ` + ready + `
      while :; do sleep 0.05; done
    fi
  done
`
}

// The scenario on local with S3 (moto's).
func TestBucketCheckpointLocalS3(t *testing.T) {
	e, st := s3Env(t)
	checkpointScenario(t, e, st, "s3")
}

// checkpointScenario is the scenario on local with store: attempt
// 1 writes steps 1-3 and is preempted with a notice; its last upload runs
// before its exit code, so attempt 2, on a new cluster with an empty
// directory, downloads steps 1-3, starts at step 4 and succeeds; the
// bucket holds step 5, and the persistent: false bucket is gone.
func checkpointScenario(t *testing.T, e *env, st bucket.Store, store string) {
	t.Helper()
	ready := filepath.Join(e.dir, "ready")
	id := e.launch(e.write("task.yaml", stepsTask(ready, store, "steps-ckpt", "steps-scratch")))
	waitFile(t, ready)
	e.waitStatus(id, "RUNNING")
	e.must("local", "preempt", strconv.FormatInt(id, 10), "--notice", "30s")
	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 2 || deref(d.Attempts[0].Outcome) != "preempted" {
		t.Fatalf("attempts %+v; want 2, the first preempted", d.Attempts)
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
	scheme := map[string]string{"s3": "s3", "gcs": "gs"}[store]
	show := e.must("jobs", "show", strconv.FormatInt(id, 10)).stdout
	if !strings.Contains(show, "Buckets:") || !strings.Contains(show, scheme+"://steps-ckpt") {
		t.Errorf("jobs show lacks the buckets:\n%s", show)
	}
}
