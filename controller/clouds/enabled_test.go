package clouds

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"sortie/controller/config"
)

// machine is a Machine of the given environment and files, nothing else.
func machine(env, files map[string]string) Machine {
	return Machine{
		Getenv: func(k string) string { return env[k] },
		ReadFile: func(p string) ([]byte, error) {
			if b, ok := files[p]; ok {
				return []byte(b), nil
			}
			return nil, fs.ErrNotExist
		},
	}
}

func TestAWSCredentialsAreFoundAsTheSDKsChainFindsThem(t *testing.T) {
	home := map[string]string{"HOME": "/home/me"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{"HOME": "/home/me"}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		cfg     config.AWSConfig
		env     map[string]string
		files   map[string]string
		source  string // "" for not enabled
		problem string
	}{
		{name: "nothing at all", env: home, problem: "no AWS credentials: none in the environment, no profile default in /home/me/.aws/config or /home/me/.aws/credentials, and this machine is no EC2 instance; set AWS_ACCESS_KEY_ID"},
		{name: "keys in the environment", env: with(map[string]string{"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s"}), source: "environment (AWS_ACCESS_KEY_ID)"},
		{name: "a key id without its secret", env: with(map[string]string{"AWS_ACCESS_KEY_ID": "AKIA"}), problem: "no AWS credentials"},
		{name: "the default profile's keys", env: home, files: map[string]string{"/home/me/.aws/credentials": "[default]\naws_access_key_id = AKIA\naws_secret_access_key = s\n"},
			source: "profile default (/home/me/.aws/credentials)"},
		{name: "an SSO profile chosen by AWS_PROFILE", env: with(map[string]string{"AWS_PROFILE": "work"}),
			files:  map[string]string{"/home/me/.aws/config": "[default]\nregion = us-east-1\n\n[profile work]\nsso_session = corp\nsso_account_id = 1\n"},
			source: "profile work (/home/me/.aws/config)"},
		{name: "a profile with a region only", env: home, files: map[string]string{"/home/me/.aws/config": "[default]\nregion = us-east-1\ns3 =\n  max_concurrent_requests = 4\n"},
			problem: "no AWS credentials: none in the environment, profile default has no credentials, and this machine is no EC2 instance"},
		{name: "aws.profile names a profile that is not there", cfg: config.AWSConfig{Profile: "gone"}, env: with(map[string]string{"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s"}),
			problem: `aws.profile in config.yaml: profile "gone" is in neither /home/me/.aws/config nor /home/me/.aws/credentials`},
		{name: "the files AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE name", env: with(map[string]string{"AWS_SHARED_CREDENTIALS_FILE": "/etc/creds", "AWS_CONFIG_FILE": "/dev/null"}),
			files: map[string]string{"/etc/creds": "[default]\naws_access_key_id = AKIA\n", "/home/me/.aws/credentials": "[other]\n"}, source: "profile default (/etc/creds)"},
		{name: "an EC2 instance's role", env: home, files: map[string]string{"/sys/class/dmi/id/sys_vendor": "Amazon EC2\n"}, source: "instance role (instance metadata service)"},
		{name: "an EC2 instance that may not ask for it", env: with(map[string]string{"AWS_EC2_METADATA_DISABLED": "true"}), files: map[string]string{"/sys/class/dmi/id/sys_vendor": "Amazon EC2\n"},
			problem: "the instance role is not asked (AWS_EC2_METADATA_DISABLED=true)"},
		{name: "a metadata service named", env: with(map[string]string{"AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:1338"}), source: "instance role (http://127.0.0.1:1338)"},
		{name: "a container's", env: with(map[string]string{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/creds"}), source: "container credentials (AWS_CONTAINER_CREDENTIALS_*)"},
		{name: "a web identity", env: with(map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/var/token", "AWS_ROLE_ARN": "arn"}), source: "web identity token (AWS_WEB_IDENTITY_TOKEN_FILE)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			source, err := awsCredentials(config.Config{AWS: tc.cfg}, machine(tc.env, tc.files))
			switch {
			case tc.source != "" && (err != nil || source != tc.source):
				t.Errorf("got %q, %v; want %q", source, err, tc.source)
			case tc.source == "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
				t.Errorf("got %q, %v; want an error with %q", source, err, tc.problem)
			}
		})
	}
}

func TestGCPAndKubernetesCredentials(t *testing.T) {
	home := t.TempDir()
	none := machine(map[string]string{"HOME": home, "CLOUDSDK_CONFIG": filepath.Join(home, "gcloud")}, nil)
	if _, err := gcpCredentials(config.Config{}, none); err == nil || !strings.Contains(err.Error(), "no application default credentials") {
		t.Errorf("gcp with nothing: %v", err)
	}
	if src, err := gcpCredentials(config.Config{GCP: config.GCPConfig{Endpoint: "http://127.0.0.1:1", Project: "p"}}, none); err != nil || !strings.Contains(src, "http://127.0.0.1:1") {
		t.Errorf("gcp with an endpoint: %q, %v", src, err)
	}
	// A Compute Engine VM's service account and project, unasked.
	vm := machine(map[string]string{"HOME": home, "CLOUDSDK_CONFIG": filepath.Join(home, "gcloud")}, map[string]string{"/sys/class/dmi/id/product_name": "Google Compute Engine\n"})
	if src, err := gcpCredentials(config.Config{}, vm); err != nil || src != "metadata server" {
		t.Errorf("gcp on a VM: %q, %v", src, err)
	}

	kubeconfig := "apiVersion: v1\ncurrent-context: dev\ncontexts:\n- name: dev\n  context: {cluster: c}\n"
	for _, tc := range []struct {
		name    string
		cfg     config.KubernetesConfig
		env     map[string]string
		files   map[string]string
		source  string
		problem string
	}{
		{name: "nothing", env: map[string]string{"HOME": "/home/me"}, problem: "no kubeconfig with a context (looked at /home/me/.kube/config); point kubernetes.kubeconfig"},
		{name: "the home's", env: map[string]string{"HOME": "/home/me"}, files: map[string]string{"/home/me/.kube/config": kubeconfig}, source: "kubeconfig /home/me/.kube/config"},
		{name: "KUBECONFIG's files", env: map[string]string{"KUBECONFIG": "/a:/b"}, files: map[string]string{"/b": kubeconfig}, source: "kubeconfig /b"},
		{name: "config.yaml's", cfg: config.KubernetesConfig{Kubeconfig: "/k"}, files: map[string]string{"/k": kubeconfig}, source: "kubeconfig /k"},
		{name: "config.yaml's, missing", cfg: config.KubernetesConfig{Kubeconfig: "/k"}, env: map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, problem: "kubernetes.kubeconfig in config.yaml: /k cannot be read"},
		{name: "no current context", env: map[string]string{"KUBECONFIG": "/k"}, files: map[string]string{"/k": "contexts:\n- name: dev\n"}, problem: "has no current context; set kubernetes.context"},
		{name: "no current context, one configured", cfg: config.KubernetesConfig{Context: "dev"}, env: map[string]string{"KUBECONFIG": "/k"}, files: map[string]string{"/k": "contexts:\n- name: dev\n"}, source: "kubeconfig /k"},
		{name: "in a pod", env: map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, source: "the pod's own cluster (in-cluster)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = map[string]string{}
			}
			source, err := kubernetesCredentials(config.Config{Kubernetes: tc.cfg}, machine(env, tc.files))
			switch {
			case tc.source != "" && (err != nil || source != tc.source):
				t.Errorf("got %q, %v; want %q", source, err, tc.source)
			case tc.source == "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
				t.Errorf("got %q, %v; want an error with %q", source, err, tc.problem)
			}
		})
	}
}

// A cloud is enabled by its set's entry, else the registry's; local and
// sim always are.
func TestSetEnabledAndCheck(t *testing.T) {
	none := machine(map[string]string{"HOME": "/nowhere", "AWS_EC2_METADATA_DISABLED": "true"}, nil)
	fake := Cloud{Name: "gcp", Check: func(context.Context, config.Config) Check { return Check{} }}
	s := NewSet(config.Config{}, []Cloud{Local(), fake})
	for _, c := range []string{"", "local", "sim", "gcp"} {
		if err := s.Enabled(c, none); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
	err := s.Enabled("aws", none)
	var ne *NotEnabledError
	if !errors.As(err, &ne) || ne.Cloud != "aws" || !strings.HasPrefix(err.Error(), "aws is not enabled here: no AWS credentials") {
		t.Errorf("aws: %v", err)
	}
}
