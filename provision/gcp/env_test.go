package gcp

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

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
		e.sshd = testenv.StartSSHD(t)
		_, line, err := sshrun.LoadOrCreateKey(filepath.Join(e.home, "keys"))
		if err != nil {
			t.Fatal(err)
		}
		e.sshd.Authorize(t, line)
		t.Cleanup(func() { testenv.KillNodeProcessesUnder(e.nodes) })
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
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
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
	cfg := e.config()
	for _, f := range change {
		f(&cfg)
	}
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// spec is a cluster spec tagged as the controller tags its clusters.
func spec(job int64, nodes int, zone string, r schema.Resources) provision.ClusterSpec {
	name := provision.ClusterName(job, 0, 1)
	return provision.ClusterSpec{
		Name:      name,
		Placement: schema.Placement{Cloud: CloudName, Region: regionOf(zone), Zone: zone},
		NumNodes:  nodes,
		Resources: r,
		Tags: map[string]string{
			provision.TagManaged: "true", provision.TagCluster: name,
			provision.TagJob: "1", provision.TagTask: "0", provision.TagAttempt: "1",
		},
	}
}

func spot() schema.Resources {
	return schema.Resources{Cloud: CloudName, UseSpot: true}
}

// launch launches s and terminates it when the test ends.
func launch(t *testing.T, p *Provider, s provision.ClusterSpec) *provision.Cluster {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p.Terminate(ctx, s.Name)
	})
	c, err := p.Launch(testContext(t), s)
	if err != nil {
		t.Fatalf("Launch %s at %s: %v", s.Name, s.Placement, err)
	}
	return c
}

func instanceIDs(c *provision.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.InstanceID)
	}
	return out
}
