package smoke_tests

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/clouds/all"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/provision/cloudtest"
	"sortie/provision/gcp"
	"sortie/provision/gcp/gcpfake"
	"sortie/provision/sshrun"
	"sortie/schema"
)

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

// TestGCPSpotJobEndToEnd runs the spot scenario on Compute Engine: the
// real client library against the in-repo fake of the REST API, every VM
// played by one private sshd.
func TestGCPSpotJobEndToEnd(t *testing.T) {
	g := newGCPEnv(t)
	spotScenario(t, g.env, spotCase{
		resources: "  cloud: gcp\n  cpus: 2\n",
		full:      func(zone string) { g.fake.SetCapacity(zone, false) },
		fullZone:  "us-central1-a",
		firstZone: "us-central1-b",
		nodes:     g.nodes,
		interrupt: func(first contract.AttemptView) {
			if err := g.fake.Preempt(deref(first.Zone), first.Cluster+"-0"); err != nil {
				t.Fatal(err)
			}
		},
		recovered: func(_, next contract.AttemptView) {
			if r := deref(next.Region); r != "us-east1" {
				t.Errorf("EAGER_NEXT_REGION recovered in %s, want us-east1", r)
			}
		},
		live: g.running,
	})
}

func TestGCPControllerKilledReattachesAndSweepsOrphans(t *testing.T) {
	g := newGCPEnv(t)
	killedControllerScenario(t, g.env, "{cloud: gcp, region: us-central1, cpus: 2}", func() string {
		cfg, err := config.Load(g.home, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		p, err := gcp.New(context.Background(), all.GCPConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		return launchOrphanOn(t, p, schema.Placement{Cloud: "gcp", Region: "us-central1", Zone: "us-central1-c"},
			schema.Resources{Cloud: "gcp", CPUs: "2"})
	}, g.running)
}

// running lists the fake's VMs that are still up.
func (g *gcpEnv) running() []string {
	var ids []string
	for _, in := range g.fake.Instances() {
		if in.GetStatus() == "RUNNING" || in.GetStatus() == "PROVISIONING" || in.GetStatus() == "STAGING" {
			ids = append(ids, strconv.FormatUint(in.GetId(), 10))
		}
	}
	return ids
}

// gceMetadata is a stand-in of GCE's metadata server for instance/preempted:
// FALSE until preempt, long polls held until the value changes.
type gceMetadata struct {
	mu      sync.Mutex
	value   string
	etag    int
	changed chan struct{}
}

func (m *gceMetadata) set(v string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.value, m.etag = v, m.etag+1
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *gceMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/computeMetadata/v1/instance/preempted" || r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	m.mu.Lock()
	changed, etag := m.changed, strconv.Itoa(m.etag)
	m.mu.Unlock()
	if q := r.URL.Query(); q.Get("wait_for_change") == "true" && (q.Get("last_etag") == "" || q.Get("last_etag") == etag) {
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
	m.mu.Lock()
	value, etag := m.value, strconv.Itoa(m.etag)
	m.mu.Unlock()
	w.Header().Set("ETag", etag)
	fmt.Fprint(w, value)
}

// TestGCPNoticeCheckpoint: the preemption notice comes from a stand-in of
// the metadata server, which the node agents ask through
// gcp.metadata_endpoint.
func TestGCPNoticeCheckpoint(t *testing.T) {
	g := newGCPEnv(t)
	meta := &gceMetadata{value: "FALSE", etag: 1, changed: make(chan struct{})}
	srv := httptest.NewServer(meta)
	t.Cleanup(srv.Close)
	cfg, err := os.ReadFile(filepath.Join(g.home, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	g.config(strings.Replace(string(cfg), "gcp:\n", "gcp:\n  metadata_endpoint: "+srv.URL+"\n", 1))
	noticeScenario(t, g.env, noticeCase{
		resources: "  cloud: gcp\n  cpus: 2\n",
		kind:      "preempted", source: "gce-metadata",
		give: func() func() {
			meta.set("TRUE")
			return func() { meta.set("FALSE") }
		},
	})
}
