package gcp

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
	"sortie/provision/internal/testenv"
	"sortie/provision/sshrun"
	"sortie/schema"
)

// env is an emulated project: the REST fake, and one sshd standing in for
// every VM, each node in its own directory under nodes.
type env struct {
	fake  *gcpfake.Server
	sshd  *testenv.SSHD // nil for tests of the API alone
	home  string
	nodes string
}

// newEnv starts the fake and, when withSSH, the private sshd with
// sortie's key authorised.
func newEnv(t *testing.T, withSSH bool, o gcpfake.Options) *env {
	t.Helper()
	e := &env{fake: gcpfake.New(t, o), home: t.TempDir(), nodes: t.TempDir()}
	if withSSH {
		e.sshd = testenv.StartNodeSSHD(t, e.home, e.nodes, sshrun.LoadOrCreateKey)
	}
	return e
}

func (e *env) config() Config {
	cfg := Config{
		Home:          e.home,
		Project:       e.fake.Project(),
		Regions:       []string{"us-central1", "us-east1"},
		Endpoint:      e.fake.URL,
		NodeDirRoot:   e.nodes,
		Logger:        testenv.QuietLogger(),
		PollInterval:  5 * time.Millisecond,
		LaunchTimeout: 30 * time.Second,
		SkipSSHCheck:  e.sshd == nil,
	}
	if e.sshd != nil {
		cfg.SSHUser = e.sshd.User
		cfg.ProxyCommand = e.sshd.ProxyCommand
	}
	return cfg
}

// provider is a new provider over the env, closed when the test ends.
func (e *env) provider(t *testing.T, change ...func(*Config)) *Provider {
	t.Helper()
	p := testenv.Build(t, New, e.config(), change...)
	t.Cleanup(func() { p.Close() })
	return p
}

func testContext(t *testing.T) context.Context { return testenv.Context(t, time.Minute) }

// spec is a cluster spec in zone, tagged as the controller tags its clusters.
func spec(job int64, nodes int, zone string, r schema.Resources) provision.ClusterSpec {
	return testenv.TaggedSpec(job, nodes, schema.Placement{Cloud: CloudName, Region: regionOf(zone), Zone: zone}, r)
}

func spot() schema.Resources {
	return schema.Resources{Cloud: CloudName, UseSpot: true}
}

// launch launches s and terminates it when the test ends.
func launch(t *testing.T, p *Provider, s provision.ClusterSpec) *provision.Cluster {
	t.Helper()
	return testenv.Launch(testContext(t), t, p, s)
}

// mustInstance is instanceFor for a request the machine type can honour.
func mustInstance(t *testing.T, p *Provider, s provision.ClusterSpec, zone string, mt machineType, rank int) *computepb.Instance {
	t.Helper()
	in, err := p.instanceFor(s, zone, mt, rank)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
