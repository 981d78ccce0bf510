package smoke_tests

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/provision/aws"
	"sortie/provision/node/notice/imdsmock"
)

// imdsGate is the instance metadata service of every emulated instance:
// AWS's simulator (amazon-ec2-metadata-mock) in spot mode, whose role
// credentials are sortie-node's, behind a gate that hides the spot
// interruption notice until the test gives it and once it has been heard.
type imdsGate struct {
	URL string

	mu        sync.Mutex
	open      bool
	credCalls int
}

func startIMDSGate(t *testing.T) *imdsGate {
	t.Helper()
	dir := t.TempDir()
	bin, err := imdsmock.Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// The role's credentials as EC2 hands them to an instance of the
	// profile: moto takes any key.
	credPath := "/latest/meta-data/iam/security-credentials/" + aws.NodeRoleName
	cfg, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"paths": map[string]string{"iam-security-credentials": credPath},
		"values": map[string]any{
			"iam-security-credentials-role": aws.NodeRoleName,
			"iam-security-credentials": map[string]string{
				"Code": "Success", "Type": "AWS-HMAC", "LastUpdated": time.Now().UTC().Format(time.RFC3339),
				"AccessKeyId": "testing", "SecretAccessKey": "testing", "Token": "testing",
				"Expiration": time.Now().Add(6 * time.Hour).UTC().Format(time.RFC3339),
			},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "aemm.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := imdsmock.Start(context.Background(), bin, dir, "spot", "--action", "terminate", "-c", cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	target, err := url.Parse(m.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	g := &imdsGate{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		open := g.open
		if r.URL.Path == credPath {
			g.credCalls++
		}
		g.mu.Unlock()
		if !open && (strings.HasPrefix(r.URL.Path, "/latest/meta-data/spot/") || strings.HasPrefix(r.URL.Path, "/latest/meta-data/events/recommendations/")) {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// notice shows (true) or hides (false) the spot interruption notice.
func (g *imdsGate) notice(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = open
}

// credentialCalls is how many times the role's credentials were asked for.
func (g *imdsGate) credentialCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.credCalls
}
