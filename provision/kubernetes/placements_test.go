package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/provision"
	"sortie/provision/kubernetes/kubetest"
	"sortie/schema"
)

func TestPlacementsAreContextsAndNamespaces(t *testing.T) {
	kubetest.Need(t, cp)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.Kubeconfig(kubeconfig, cp.Token, "from-context", ctxA, ctxB); err != nil {
		t.Fatal(err)
	}
	pl := func(c, ns string) schema.Placement { return schema.Placement{Cloud: CloudName, Region: c, Zone: ns} }
	for _, tc := range []struct {
		name string
		cfg  Config
		r    schema.Resources
		want []schema.Placement
		err  string
	}{
		{"the current context and its namespace", Config{}, schema.Resources{}, []schema.Placement{pl(ctxA, "from-context")}, ""},
		{"a configured context and namespace", Config{Context: ctxB, Namespace: "ml"}, schema.Resources{}, []schema.Placement{pl(ctxB, "ml")}, ""},
		{"allowed ones, contexts first", Config{AllowedContexts: []string{ctxB, ctxA}, AllowedNamespaces: []string{"a", "b"}}, schema.Resources{},
			[]schema.Placement{pl(ctxB, "a"), pl(ctxB, "b"), pl(ctxA, "a"), pl(ctxA, "b")}, ""},
		{"pinned", Config{AllowedContexts: []string{ctxA, ctxB}, AllowedNamespaces: []string{"a", "b"}}, schema.Resources{Region: ctxB, Zone: "b"},
			[]schema.Placement{pl(ctxB, "b")}, ""},
		{"a context not allowed", Config{}, schema.Resources{Region: "prod"}, nil,
			`resources.region: context "prod" is not one sortie may use (ctx-a); add it to kubernetes.allowed_contexts`},
		{"a namespace not allowed", Config{Namespace: "ml"}, schema.Resources{Zone: "kube-system"}, nil,
			`resources.zone: namespace "kube-system" is not one sortie may use in context ctx-a (ml); add it to kubernetes.allowed_namespaces`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Kubeconfig = kubeconfig
			p, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			got, err := p.Placements(context.Background(), tc.r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || provision.Classify(err) != provision.ClassPrechecks {
					t.Fatalf("Placements = %v, %v; want a prechecks error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Placements (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubeconfigProblemsAreNamed(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New(context.Background(), Config{Kubeconfig: empty})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Placements(context.Background(), schema.Resources{}); err == nil || !strings.Contains(err.Error(), "the kubeconfig has no contexts") {
		t.Errorf("Placements with an empty kubeconfig: %v", err)
	}
	if _, err := New(context.Background(), Config{Kubeconfig: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "kubernetes.kubeconfig") {
		t.Errorf("New with a missing kubeconfig: %v", err)
	}
	kubetest.Need(t, cp)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.Kubeconfig(kubeconfig, cp.Token, "ns", ctxA); err != nil {
		t.Fatal(err)
	}
	p, err = New(context.Background(), Config{Kubeconfig: kubeconfig, Context: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Status(context.Background(), []string{"sortie-1-0-1"})
	if err == nil || !strings.Contains(err.Error(), `context "nope" is not in the kubeconfig`) {
		t.Errorf("Status in a context the kubeconfig lacks: %v", err)
	}
}
