package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/provision/node"
	"sortie/schema"
)

// credentialsEnv is an environment in which aws and gcp are enabled:
// keys for AWS, a service account key file for Google.
func credentialsEnv(t *testing.T) func(string) string {
	t.Helper()
	key := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(key, []byte(`{"type": "service_account", "project_id": "p"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
		"GOOGLE_APPLICATION_CREDENTIALS": key, "HOME": t.TempDir()}
	return func(k string) string { return env[k] }
}

// noCredentials leaves this process no AWS credentials and no
// kubeconfig: no AWS_* keys or profile, the instance role not asked, and
// a home of its own without ~/.aws or ~/.kube.
func noCredentials(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN",
		"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
		"KUBECONFIG", "KUBERNETES_SERVICE_HOST"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("HOME", t.TempDir())
}

// A launch on a cloud that is not enabled here is refused at once,
// naming the cloud, why, and `sortie check`, and stores nothing; the dry
// run lists it under what the launch lacks.
func TestLaunchRefusesACloudThatIsNotEnabled(t *testing.T) {
	ctx := context.Background()
	noCredentials(t)
	s := testService(t)
	root := project(t, map[string]string{"minimal.yaml": "resources:\n  infra: aws\nrun: echo hi\n"})
	req := contract.LaunchRequest{File: filepath.Join(root, "minimal.yaml"), Dir: root}

	_, err := s.Launch(ctx, req)
	got := problems(t, err)
	if len(got) != 1 {
		t.Fatalf("problems %q, want one", got)
	}
	for _, want := range []string{"resources: aws is not enabled here: no AWS credentials", "AWS_ACCESS_KEY_ID", "aws.profile in config.yaml",
		"AWS_EC2_METADATA_DISABLED=true", "`sortie check`"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("the refusal lacks %q: %s", want, got[0])
		}
	}
	if jobs, err := s.Queue(ctx, contract.QueueRequest{All: true}); err != nil || len(jobs) != 0 {
		t.Errorf("a refused launch stored %d jobs (%v)", len(jobs), err)
	}

	plan, err := s.Plan(ctx, req)
	if err != nil {
		t.Fatalf("the dry run of a valid file: %v", err)
	}
	if len(plan.Missing) != 1 || plan.Missing[0] != got[0] {
		t.Errorf("the dry run's missing %q, want the launch's refusal %q", plan.Missing, got[0])
	}
	if len(plan.Tasks[0].Placements) != 0 {
		t.Errorf("the dry run plans on a cloud that is not enabled: %+v", plan.Tasks[0].Placements)
	}
}

// Of the clouds a task allows, only the enabled ones are candidates: a
// task with any_of [aws, local] launches, on local, saying aws is left
// out; with none enabled, each cloud is refused with its reason.
func TestOnlyEnabledCloudsAreCandidates(t *testing.T) {
	ctx := context.Background()
	noCredentials(t)
	s := testService(t)
	root := project(t, map[string]string{
		"either.yaml":  "resources:\n  any_of:\n    - {infra: aws}\n    - {infra: local}\nrun: echo hi\n",
		"neither.yaml": "resources:\n  ordered:\n    - {cloud: aws, region: us-east-1}\n    - {cloud: kubernetes}\n    - {cloud: aws, region: us-west-2}\nrun: echo hi\n",
	})
	var warned []string
	req := contract.LaunchRequest{File: filepath.Join(root, "either.yaml"), Dir: root, Warn: func(w string) { warned = append(warned, w) }}
	plan, err := s.Plan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range plan.Tasks[0].Placements {
		if pl.Cloud != "local" {
			t.Errorf("the dry run plans on %s", pl.Cloud)
		}
	}
	if len(plan.Tasks[0].Placements) == 0 || len(plan.Missing) != 0 {
		t.Errorf("placements %+v, missing %q: want local's, nothing missing", plan.Tasks[0].Placements, plan.Missing)
	}
	const leftOut = "resources: aws is not enabled here, so its placements are left out (`sortie check` says why)"
	if len(warned) != 1 || warned[0] != leftOut || len(plan.Warnings) != 1 {
		t.Errorf("dry run warnings %q (plan %q), want %q", warned, plan.Warnings, leftOut)
	}
	warned = nil
	job, err := s.Launch(ctx, req)
	if err != nil {
		t.Fatalf("launch with local left: %v", err)
	}
	if len(warned) != 1 || warned[0] != leftOut {
		t.Errorf("launch warnings %q, want %q", warned, leftOut)
	}
	stored, err := s.Store.Job(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := schema.Unmarshal(stored.Spec, clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Tasks[0].Resources.AnyOf); n != 2 {
		t.Errorf("the stored task has %d any_of items, want the file's 2 (the controller leaves aws out where it runs)", n)
	}

	_, err = s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "neither.yaml"), Dir: root})
	got := problems(t, err)
	if len(got) != 2 || !strings.HasPrefix(got[0], "resources: aws is not enabled here: no AWS credentials") ||
		!strings.HasPrefix(got[1], "resources: kubernetes is not enabled here: no kubeconfig with a context") {
		t.Errorf("problems %q, want aws's then kubernetes's", got)
	}
	for _, g := range got {
		if !strings.HasSuffix(g, "`sortie check` says what each cloud lacks") {
			t.Errorf("%q does not point to sortie check", g)
		}
	}
	if jobs, err := s.Queue(ctx, contract.QueueRequest{All: true}); err != nil || len(jobs) != 1 {
		t.Errorf("%d jobs stored (%v), want the one that launched", len(jobs), err)
	}
}

// Clouds configured for emulators and test clusters count as enabled:
// AWS keys in the environment, a GCP endpoint, a kubeconfig.
func TestConfiguredCloudsAreEnabled(t *testing.T) {
	ctx := context.Background()
	noCredentials(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	s := testService(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\ncurrent-context: test\ncontexts:\n- name: test\n  context: {cluster: c, user: u}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Home, "config.yaml"), []byte("gcp:\n  project: p\n  endpoint: http://127.0.0.1:1\nkubernetes:\n  kubeconfig: "+kubeconfig+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenConfig(s.Home, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := project(t, map[string]string{"t.yaml": "resources:\n  ordered:\n    - {cloud: aws, region: us-east-1}\n    - {cloud: gcp}\n    - {cloud: kubernetes}\nrun: 'true'\n"})
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pl := range plan.Tasks[0].Placements {
		got = append(got, pl.Cloud)
	}
	if strings.Join(got, ",") != "aws,gcp,kubernetes" || len(plan.Missing) != 0 || len(plan.Warnings) != 0 {
		t.Errorf("placements on %q, missing %q, warnings %q: want every cloud, nothing missing", got, plan.Missing, plan.Warnings)
	}
}

// A bucket on a cloud that is not enabled here, whose check fails for
// want of credentials, is refused as that cloud would be, naming the
// field, the cloud, why and `sortie check`, not with the store's
// credential chain error; nothing is stored.
func TestABucketOfACloudNotEnabledIsRefusedSayingWhy(t *testing.T) {
	ctx := context.Background()
	noCredentials(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "sortie-sync")
	script := "#!/bin/sh\necho 'operation error S3: HeadBucket, get identity: get credentials: no EC2 IMDS role found' >&2\nexit 1\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(node.SyncEnv, prog)
	s := testService(t)
	root := project(t, map[string]string{"s3.yaml": "file_mounts:\n  /inputs: s3://inputs/data\nrun: ls /inputs\n"})
	_, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "s3.yaml"), Dir: root})
	var verr *schema.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("launch: %v, want the bucket refused as a problem of the file", err)
	}
	got := problems(t, err)
	if len(got) != 1 {
		t.Fatalf("problems %q, want one", got)
	}
	for _, want := range []string{`file_mounts./inputs: "inputs" is in s3, and aws is not enabled here: no AWS credentials`, "`sortie check`"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("the refusal lacks %q: %s", want, got[0])
		}
	}
	if strings.Contains(got[0], "IMDS") {
		t.Errorf("the refusal says the store's credential error: %s", got[0])
	}
	if jobs, err := s.Queue(ctx, contract.QueueRequest{All: true}); err != nil || len(jobs) != 0 {
		t.Errorf("a refused launch stored %d jobs (%v)", len(jobs), err)
	}
}
