package controller

import (
	"context"
	"strings"
	"testing"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision/local"
	"sortie/schema"
)

// The controller leaves out the clouds that are not enabled where it
// runs, as the launch did: a task with any_of [aws, local] runs on local,
// one on aws alone ends FAILED_PRECHECKS saying why, asking AWS nothing.
func TestLaunchLeavesOutCloudsThatAreNotEnabled(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_EC2_METADATA_SERVICE_ENDPOINT"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("HOME", t.TempDir())
	c, _ := withLocalProvider(t, local.SandboxOff)
	cfg := c.Config
	cfg.Home, cfg.Local.Sandbox = t.TempDir(), local.SandboxOff
	set := clouds.NewSet(cfg, clouds.Light())
	t.Cleanup(func() {
		lp := clouds.LocalProvider(cfg)
		cls, _ := lp.List(context.Background())
		for _, cl := range cls {
			lp.Terminate(context.Background(), cl.Name)
		}
	})
	c.Providers = set

	store1 := func(yaml string) int64 {
		p, err := schema.Parse([]byte(yaml), clouds.Schema())
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.Store.CreateJob(context.Background(), &store.Job{Name: "j", Spec: b, NumTasks: 1}, []store.NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	either := store1("resources:\n  any_of:\n    - {infra: aws}\n    - {infra: local}\nrun: 'true'\n")
	if j := launchAndStart(t, c, either); j.Status != lifecycle.Running {
		t.Fatalf("any_of [aws, local]: job %s (%s), want RUNNING on local", j.Status, j.FailureReason)
	}
	as, err := c.Store.Attempts(context.Background(), either)
	if err != nil || len(as) != 1 || as[0].Cloud != "local" {
		t.Fatalf("attempts %+v (%v), want one on local", as, err)
	}

	awsOnly := store1("resources:\n  infra: aws/us-east-1\nrun: 'true'\n")
	j := launchAndStart(t, c, awsOnly)
	if j.Status != lifecycle.FailedPrechecks || !strings.Contains(j.FailureReason, "no cloud the task allows is enabled on the controller's machine: aws is not enabled here: no AWS credentials") {
		t.Errorf("aws alone: job %s (%s), want FAILED_PRECHECKS saying aws is not enabled", j.Status, j.FailureReason)
	}
	if got := set.Opened(); len(got) != 1 || got[0] != "local" {
		t.Errorf("opened %q: the controller opened a cloud that is not enabled", got)
	}
}
