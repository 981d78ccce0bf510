package api

import (
	"sortie/controller/contract"
	"strings"
	"testing"
)

// A server refuses a launch on a cloud that is not enabled on its own
// machine, whatever the request carries: 422 with the problem naming the
// cloud, why, and `sortie check` on the server's machine; nothing stored.
func TestServerRefusesACloudThatIsNotEnabled(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_SERVICE_ENDPOINT"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("HOME", t.TempDir())
	ts := newTestServer(t, Options{})
	var e contract.ErrorBody
	req := contract.LaunchRequest{File: "minimal.yaml", Task: []byte("resources: {infra: aws}\nrun: 'true'\n"),
		SecretEnv: map[string]string{"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s"}}
	resp := ts.do(t, "alice", "POST", "/v1/jobs", req, &e)
	if resp.StatusCode != 422 || e.Error.Code != contract.CodeInvalidTask || len(e.Error.Problems) != 1 {
		t.Fatalf("launch on aws: %d %+v", resp.StatusCode, e)
	}
	p := e.Error.Problems[0]
	if p.Path != "resources" || !strings.HasPrefix(p.Message, "aws is not enabled here: no AWS credentials") ||
		!strings.HasSuffix(p.Message, "`sortie check` on the server's machine says what each cloud lacks") {
		t.Errorf("problem %+v", p)
	}
	var jobs []contract.JobView
	if resp := ts.do(t, "alice", "GET", "/v1/jobs?all=true", nil, &jobs); resp.StatusCode != 200 || len(jobs) != 0 {
		t.Errorf("queue after the refusal: %d %+v", resp.StatusCode, jobs)
	}
}
