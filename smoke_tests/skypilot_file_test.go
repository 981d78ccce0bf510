package smoke_tests

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/provision/cloudtest"
)

// noAWS is a user's environment with no AWS credentials and no
// kubeconfig: no AWS_* keys or profile, the instance role not asked, and
// a home without ~/.aws or ~/.kube.
func noAWS(t *testing.T) []string {
	env := []string{"AWS_EC2_METADATA_DISABLED=true", "HOME=" + t.TempDir(), "KUBECONFIG=", "KUBERNETES_SERVICE_HOST="}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN",
		"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_SERVICE_ENDPOINT"} {
		env = append(env, k+"=")
	}
	return env
}

// A SkyPilot file on a cloud that is not enabled here is refused at once,
// as SkyPilot's optimizer refuses it: exit 2, naming the cloud, why and
// `sortie check`, and nothing stored; the dry run lists it under what the
// launch lacks. A file that also allows local runs there.
func TestALaunchOnACloudThatIsNotEnabledIsRefused(t *testing.T) {
	e := newEnv(t, noAWS(t)...)
	e.write("examples/minimal.yaml", "name: minimal\nresources:\n  infra: aws\nrun: echo hello\n")

	r := e.run("jobs", "launch", "-d", "examples/minimal.yaml")
	if r.code != 2 {
		t.Fatalf("launch on aws without credentials: exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	check := e.run("check")
	for _, want := range []string{"error: resources: aws is not enabled here: no AWS credentials: none in the environment",
		"set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", "aws.profile in config.yaml", "`sortie check` says what each cloud lacks"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(check.stdout, "aws: disabled\n  ✗ no AWS credentials: none in the environment") {
		t.Errorf("sortie check does not give the same reason:\n%s", check.stdout)
	}
	if q := e.queue("-a"); len(q) != 0 {
		t.Fatalf("a refused launch stored %d jobs", len(q))
	}

	d := e.run("jobs", "launch", "--dry-run", "examples/minimal.yaml")
	if d.code != 0 || !strings.Contains(d.stderr, "note: the file is valid; a launch from here would be refused until 1 missing input(s) are given") {
		t.Errorf("dry run: exit %d, want 0 with the note of what is missing, as for a missing env\n%s", d.code, d.stderr)
	}
	if !strings.Contains(d.stdout, "would be refused until these are given:\n  resources: aws is not enabled here: no AWS credentials") {
		t.Errorf("the plan does not list aws under what is missing:\n%s", d.stdout)
	}

	e.write("examples/either.yaml", "name: either\nresources:\n  any_of:\n    - {infra: aws}\n    - {infra: local}\nrun: echo ran here\n")
	r = e.must("jobs", "launch", "-d", "examples/either.yaml")
	if !strings.Contains(r.stderr, "warning: resources: aws is not enabled here, so its placements are left out") {
		t.Errorf("no warning that aws is left out:\n%s", r.stderr)
	}
	id, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
	if err != nil {
		t.Fatalf("launch printed %q", r.stdout)
	}
	job := e.waitStatus(id, "SUCCEEDED")
	if len(job.Attempts) != 1 || job.Attempts[0].Cloud == nil || *job.Attempts[0].Cloud != "local" {
		t.Errorf("attempts %+v, want one on local", job.Attempts)
	}
}

// A SkyPilot file's file_mounts, run for real on local (sandboxed, as it
// is by default where bubblewrap is): an s3:// URL as a plain source is
// the bucket's prefix, copied to the node before the task runs
// (SkyPilot's COPY), at an absolute path the task sees there while this
// machine's path is never written; a ~/ destination, of a local file or a
// bucket, is in the node's home, which on local is the node's own.
func TestSkyPilotFileMountsRunOnLocal(t *testing.T) {
	m := cloudtest.StartMoto(t)
	st := s3Store(t, m.URL)
	ctx := context.Background()
	if err := st.Create(ctx, "inputs"); err != nil {
		t.Fatal(err)
	}
	for key, body := range map[string]string{"data/a.txt": "from the bucket\n", "data/sub/b.txt": "nested\n", "other/c.txt": "not this prefix\n"} {
		if _, err := st.Put(ctx, "inputs", key, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	e := sandboxEnv(t, "AWS_ENDPOINT_URL_S3="+m.URL, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_REGION=us-east-1", "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_CONFIG_FILE="+os.DevNull, "AWS_EC2_METADATA_DISABLED=true")
	e.write("settings.txt", "lr=0.1\n")
	f := e.write("task.yaml", `
name: skypilot-mounts
file_mounts:
  /inputs: s3://inputs/data
  ~/cache: s3://inputs/data/sub
  ~/cfg/settings.txt: ./settings.txt
run: |
  echo "a: $(cat /inputs/a.txt)"
  echo "cached: $(cat ~/cache/b.txt)"
  echo "b: $(cat /inputs/sub/b.txt)"
  [ -e /inputs/c.txt ] || [ -e /inputs/other ] && echo "OTHER-PREFIX"
  echo "settings: $(cat ~/cfg/settings.txt)"
  N=${SORTIE_NODE_DIR%%/attempt-*}
  case $HOME in "$N"/*) echo "home is the node's" ;; esac
  [ -f "$HOME/cfg/settings.txt" ] && echo "settings in HOME"
  [ -e '~' ] && echo "LITERAL-TILDE"
  exit 0
`)
	plan := e.must("jobs", "launch", "--dry-run", f).stdout
	if !strings.Contains(plan, "/inputs ← s3://inputs/data") {
		t.Errorf("the plan does not show the bucket URL as the source:\n%s", plan)
	}
	id := e.launch(f)
	e.waitFor(id, 60*time.Second, "the end", func(d contract.JobDetail) bool { return isTerminal(d.Status) })
	out := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout
	if d := e.show(id); d.Status != "SUCCEEDED" {
		t.Fatalf("job ended %s (%s):\n%s", d.Status, deref(d.FailureReason), out)
	}
	for _, want := range []string{"a: from the bucket", "b: nested", "cached: nested", "settings: lr=0.1", "home is the node's", "settings in HOME"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"OTHER-PREFIX", "LITERAL-TILDE"} {
		if strings.Contains(out, bad) {
			t.Errorf("log has %s:\n%s", bad, out)
		}
	}
	if _, err := os.Stat("/inputs/a.txt"); err == nil {
		t.Errorf("/inputs/a.txt was written on this machine's real path")
	}
}
