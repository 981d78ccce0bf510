package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/internal/testenv"
	"sortie/provision/kubernetes/kubetest"
	"sortie/schema"
)

// cp is the control plane every test of the package shares; each test
// works in namespaces of its own.
var cp *kubetest.ControlPlane

// TestMain starts etcd and kube-apiserver (built by make
// kube-control-plane) for the package's tests, and stops them after.
func TestMain(m *testing.M) { os.Exit(kubetest.Main(m, &cp)) }

// Contexts of the test kubeconfig: both reach the one apiserver.
const (
	ctxA = "ctx-a"
	ctxB = "ctx-b/with:slashes"
)

// env is one test's namespaces, served by a kubelet of its own, and a
// kubeconfig whose contexts reach them.
type env struct {
	t          *testing.T
	ns         []string
	kubelet    *kubetest.Kubelet
	kubeconfig string
}

// newEnv makes n namespaces and serves them with a new node's kubelet
// until the test ends.
func newEnv(t *testing.T, n int) *env {
	t.Helper()
	return makeEnv(t, n, true)
}

// newQuietEnv is newEnv with a kubelet that does nothing unless the test
// asks it to.
func newQuietEnv(t *testing.T, n int) *env {
	t.Helper()
	return makeEnv(t, n, false)
}

func makeEnv(t *testing.T, n int, serve bool) *env {
	t.Helper()
	kubetest.Need(t, cp)
	e := &env{t: t, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	for range n {
		e.ns = append(e.ns, cp.Namespace(t))
	}
	if err := cp.Kubeconfig(e.kubeconfig, cp.Token, e.ns[0], ctxA, ctxB); err != nil {
		t.Fatal(err)
	}
	e.kubelet = cp.StartKubelet(t, "node-"+e.ns[0])
	if !serve {
		return e
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, ns := range e.ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.kubelet.Serve(ctx, ns); err != nil {
				t.Errorf("kubelet: %v", err)
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return e
}

// config is a provider config over the env's kubeconfig: every namespace
// allowed, in ctxA.
func (e *env) config() Config {
	return Config{
		Kubeconfig:        e.kubeconfig,
		AllowedNamespaces: e.ns,
		Logger:            testenv.QuietLogger(),
		PollInterval:      10 * time.Millisecond,
		ProvisionTimeout:  time.Second,
		LaunchTimeout:     time.Minute,
	}
}

// provider is a new provider over the env, closed when the test ends.
func (e *env) provider(t *testing.T, change ...func(*Config)) *Provider {
	t.Helper()
	p := testenv.Build(t, New, e.config(), change...)
	t.Cleanup(func() { p.Close() })
	return p
}

func testContext(t *testing.T) context.Context { return testenv.Context(t, time.Minute) }

// spec is a tagged cluster spec in namespace ns of ctxA.
func spec(job int64, nodes int, ns string, r schema.Resources) provision.ClusterSpec {
	r.Cloud = CloudName
	return testenv.TaggedSpec(job, nodes, schema.Placement{Cloud: CloudName, Region: ctxA, Zone: ns}, r)
}

// launch launches s and terminates it when the test ends.
func launch(t *testing.T, p *Provider, s provision.ClusterSpec) *provision.Cluster {
	t.Helper()
	return testenv.Launch(testContext(t), t, p, s)
}
