package all

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/clouds"
	"sortie/controller/config"
)

// The controller opens the clouds whose facts the registry holds, every
// one of them, in the same order, with the same facts; and task files
// name exactly those.
func TestEveryKnownCloudOpensAndNoOther(t *testing.T) {
	var opened, known []string
	for _, c := range Clouds() {
		opened = append(opened, c.Name)
		if c.Open == nil {
			t.Errorf("%s cannot be opened", c.Name)
		}
		k := clouds.Lookup(c.Name)
		if k.Remote != c.Remote || k.Task.Store != c.Task.Store || (k.Notice == nil) != (c.Notice == nil) || (k.Task.Place == nil) != (c.Task.Place == nil) {
			t.Errorf("%s: the controller's entry has other facts than the registry's", c.Name)
		}
	}
	for _, c := range clouds.Known() {
		known = append(known, c.Name)
	}
	if diff := cmp.Diff(known, opened); diff != "" {
		t.Errorf("clouds (-known +opened):\n%s", diff)
	}
	if diff := cmp.Diff(known, clouds.Schema().Names()); diff != "" {
		t.Errorf("clouds task files may name (-known +schema):\n%s", diff)
	}
}

// sortie check reports a cloud a launch would refuse with the launch's
// reason, asking the cloud nothing: not AWS's credential chain (which
// would ask the instance metadata service), not a cluster.
func TestCheckSaysWhatALaunchRefuses(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
		"KUBECONFIG", "KUBERNETES_SERVICE_HOST"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("HOME", t.TempDir())
	cfg := config.Config{Home: t.TempDir()}
	set := clouds.NewSet(cfg, []clouds.Cloud{AWS(), Kubernetes()})
	for _, c := range set.Check(context.Background()) {
		want := map[string]string{"aws": "no AWS credentials: none in the environment", "kubernetes": "no kubeconfig with a context"}[c.Cloud]
		if c.OK || len(c.Problems) != 1 || !strings.HasPrefix(c.Problems[0], want) {
			t.Errorf("%s: %+v, want disabled with %q", c.Cloud, c, want)
		}
		err := set.Enabled(c.Cloud, clouds.Machine{})
		if err == nil || err.Error() != c.Cloud+" is not enabled here: "+c.Problems[0] {
			t.Errorf("%s: a launch is refused with %v, sortie check says %q", c.Cloud, err, c.Problems)
		}
	}
}
