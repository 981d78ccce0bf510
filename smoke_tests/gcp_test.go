package smoke_tests

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/controller"
	"sortie/provision/cloudtest"
	"sortie/provision/gcp"
	"sortie/provision/gcp/gcpfake"
	"sortie/provision/sshrun"
	"sortie/schema"
)

// TestGCPSpotJobEndToEnd is the AWS scenario on Compute Engine: the real
// client library against the in-repo fake of the REST API, every VM played
// by one private sshd.
// gcpEnv is a user whose Compute Engine is the in-repo fake of the API,
// and whose VMs are all played by one private sshd.
type gcpEnv struct {
	*env
	fake  *gcpfake.Server
	nodes string
}

func newGCPEnv(t *testing.T) *gcpEnv {
	t.Helper()
	fake := gcpfake.New(t, gcpfake.Options{})
	sshd := cloudtest.StartSSHD(t)
	nodes := t.TempDir()
	t.Cleanup(func() { cloudtest.KillNodeProcessesUnder(nodes) })
	e := newEnv(t, "GOOGLE_APPLICATION_CREDENTIALS=", "CLOUDSDK_CONFIG="+t.TempDir())
	_, line, err := sshrun.LoadOrCreateKey(filepath.Join(e.home, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	sshd.Authorize(t, line)
	e.config(fmt.Sprintf(`
gcp:
  project: %s
  regions: [us-central1, us-east1]
  endpoint: %s
  ssh_user: %s
  node_dir: %s
  poll_interval: 20ms
  launch_timeout: 60s
ssh:
  proxy_command: %q
`, fake.Project(), fake.URL, sshd.User, nodes, sshd.ProxyCommand))
	return &gcpEnv{env: e, fake: fake, nodes: nodes}
}

func TestGCPSpotJobEndToEnd(t *testing.T) {
	g := newGCPEnv(t)
	e, fake, nodes := g.env, g.fake, g.nodes
	fake.SetCapacity("us-central1-a", false)
	marker := filepath.Join(e.dir, "started")
	f := e.write("task.yaml", `
name: spot-train
resources:
  cloud: gcp
  cpus: 2
  use_spot: true
  job_recovery:
    strategy: EAGER_NEXT_REGION
    recover_on_exit_codes: [29]
run: |
  echo "attempt $SORTIE_ATTEMPT as rank $SORTIE_NODE_RANK"
  if [ "$SORTIE_ATTEMPT" = 1 ]; then touch `+marker+`; sleep 300; fi
  if [ "$SORTIE_ATTEMPT" = 2 ]; then exit 29; fi
  echo finished
`)
	id := e.launch(f)
	waitFile(t, marker)
	d := e.waitStatus(id, "RUNNING")
	first := d.Attempts[0]
	if deref(first.Zone) != "us-central1-b" {
		t.Fatalf("first attempt in %s; us-central1-a has no capacity, us-central1-b is next", deref(first.Zone))
	}
	if len(d.LaunchTries) == 0 || d.LaunchTries[0].Zone != "us-central1-a" || d.LaunchTries[0].Class != "capacity" {
		t.Errorf("launch tries: %+v", d.LaunchTries)
	}
	if err := fake.Preempt("us-central1-b", first.Cluster+"-0"); err != nil {
		t.Fatal(err)
	}
	cloudtest.KillNodeProcesses(filepath.Join(nodes, first.InstanceIDs[0]))

	d = e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 3 {
		t.Fatalf("attempts: %+v", d.Attempts)
	}
	want := []string{"preempted", "user_failure", "succeeded"}
	for i, a := range d.Attempts {
		if deref(a.Outcome) != want[i] {
			t.Errorf("attempt %d outcome %s, want %s (%s)", a.Attempt, deref(a.Outcome), want[i], deref(a.Reason))
		}
		t.Logf("attempt %d: %s/%s %v outcome %s codes %v: %s", a.Attempt, deref(a.Region), deref(a.Zone), a.InstanceIDs,
			deref(a.Outcome), codes(d)[i], deref(a.Decision))
	}
	if r := deref(d.Attempts[1].Region); r != "us-east1" {
		t.Errorf("EAGER_NEXT_REGION recovered in %s, want us-east1", r)
	}
	if d.Attempts[2].Cluster != d.Attempts[1].Cluster {
		t.Errorf("the restart after exit 29 did not reuse the healthy cluster")
	}
	if d.RecoveryCount != 2 || d.RestartsOnErrors != 0 {
		t.Errorf("recovery_count %d restarts_on_errors %d", d.RecoveryCount, d.RestartsOnErrors)
	}
	if logs := e.must("jobs", "logs", strconv.FormatInt(id, 10)).stdout; !strings.Contains(logs, "finished") {
		t.Errorf("logs: %q", logs)
	}
	e.must("controller", "stop")
	for _, in := range fake.Instances() {
		if in.GetStatus() == "RUNNING" || in.GetStatus() == "PROVISIONING" || in.GetStatus() == "STAGING" {
			t.Errorf("VM %s left %s", in.GetName(), in.GetStatus())
		}
	}
}

func TestGCPControllerKilledReattachesAndSweepsOrphans(t *testing.T) {
	g := newGCPEnv(t)
	running := func() []string {
		var ids []string
		for _, in := range g.fake.Instances() {
			if in.GetStatus() == "RUNNING" || in.GetStatus() == "PROVISIONING" || in.GetStatus() == "STAGING" {
				ids = append(ids, strconv.FormatUint(in.GetId(), 10))
			}
		}
		return ids
	}
	killedControllerScenario(t, g.env, "{cloud: gcp, region: us-central1, cpus: 2}", func() string {
		cfg, err := controller.LoadConfig(g.home, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		p, err := gcp.New(context.Background(), controller.GCPConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		return launchOrphanOn(t, p, schema.Placement{Cloud: "gcp", Region: "us-central1", Zone: "us-central1-c"},
			schema.Resources{Cloud: "gcp", CPUs: "2"})
	}, running)
}
