package aws

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"sortie/provision"
	"sortie/provision/internal/testenv"
	"sortie/provision/sshrun"
	"sortie/schema"
)

// env is an emulated AWS account: moto behind the fault-injecting proxy,
// and one sshd standing in for every instance, each node in its own
// directory under nodes.
type env struct {
	moto  *testenv.Moto
	proxy *testenv.EC2Proxy
	sshd  *testenv.SSHD
	home  string
	nodes string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{home: t.TempDir(), nodes: t.TempDir()}
	e.moto = testenv.StartMoto(t)
	e.proxy = testenv.StartEC2Proxy(t, e.moto.URL)
	e.sshd = testenv.StartSSHD(t)
	_, line, err := sshrun.LoadOrCreateKey(filepath.Join(e.home, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	e.sshd.Authorize(t, line)
	t.Cleanup(func() { testenv.KillNodeProcessesUnder(e.nodes) })
	return e
}

func (e *env) config() Config {
	return Config{
		Home:             e.home,
		Regions:          []string{"us-east-1", "us-west-2"},
		Endpoint:         e.proxy.URL,
		SSHUser:          e.sshd.User,
		ProxyCommand:     e.sshd.ProxyCommand,
		NodeDirRoot:      e.nodes,
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		Credentials:      credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		RetryMaxAttempts: 1,
		PollInterval:     20 * time.Millisecond,
		LaunchTimeout:    30 * time.Second,
	}
}

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
	return p
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// spec is a cluster spec tagged as the controller tags its clusters.
func spec(job int64, nodes int, at schema.Placement, r schema.Resources) provision.ClusterSpec {
	name := provision.ClusterName(job, 0, 1)
	return provision.ClusterSpec{
		Name:      name,
		Placement: at,
		NumNodes:  nodes,
		Resources: r,
		Tags: map[string]string{
			provision.TagManaged: "true", provision.TagCluster: name,
			provision.TagJob: "1", provision.TagTask: "0", provision.TagAttempt: "1",
		},
	}
}

func spot() schema.Resources {
	return schema.Resources{Cloud: "aws", InstanceType: "t3.micro", UseSpot: true}
}

func zone(z string) schema.Placement {
	return schema.Placement{Cloud: "aws", Region: z[:len(z)-1], Zone: z}
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
