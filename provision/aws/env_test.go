package aws

import (
	"context"
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
	e.sshd = testenv.StartNodeSSHD(t, e.home, e.nodes, sshrun.LoadOrCreateKey)
	return e
}

func (e *env) config() Config {
	return Config{
		Home:             e.home,
		Regions:          []string{"us-east-1", "us-west-2"},
		Endpoint:         e.proxy.URL,
		IAMEndpoint:      e.proxy.URL,
		SSHUser:          e.sshd.User,
		ProxyCommand:     e.sshd.ProxyCommand,
		NodeDirRoot:      e.nodes,
		Logger:           testenv.QuietLogger(),
		Credentials:      credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		RetryMaxAttempts: 1,
		PollInterval:     20 * time.Millisecond,
		LaunchTimeout:    30 * time.Second,
	}
}

func (e *env) provider(t *testing.T, change ...func(*Config)) *Provider {
	t.Helper()
	return testenv.Build(t, New, e.config(), change...)
}

func testContext(t *testing.T) context.Context { return testenv.Context(t, 2*time.Minute) }

// spec is a cluster spec tagged as the controller tags its clusters.
func spec(job int64, nodes int, at schema.Placement, r schema.Resources) provision.ClusterSpec {
	return testenv.TaggedSpec(job, nodes, at, r)
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
	return testenv.Launch(testContext(t), t, p, s)
}
