package kubernetes

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sortie/provision"
	"sortie/provision/kubernetes/kubetest"
	"sortie/schema"
)

// TestCheckSaysWhatRBACLacks: a user with no Role is told each verb it
// lacks; once bound to the Role Permissions lists (README.md here), the
// check passes, and an unreachable context is named.
func TestCheckSaysWhatRBACLacks(t *testing.T) {
	kubetest.Need(t, cp)
	ns := cp.Namespace(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.Kubeconfig(kubeconfig, cp.UserToken, ns, ctxA); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	r, err := Check(ctx, Config{Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "context ctx-a, namespace "+ns+": sortie may not create pods, get pods") ||
		!strings.Contains(r.Problems[0], "get pods/log") {
		t.Errorf("check without a Role: problems %q", r.Problems)
	}

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "sortie", Namespace: ns}}
	for _, perm := range Permissions() {
		res := perm.Resource
		if perm.Subresource != "" {
			res += "/" + perm.Subresource
		}
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{res}, Verbs: perm.Verbs})
	}
	if _, err := cp.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sortie", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "sortie"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: kubetest.User}}}
	if _, err := cp.Client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err = Check(context.Background(), Config{Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	// The test control plane's apiserver is stamped with its version.
	if want := "context ctx-a, namespace " + ns + ": reachable (Kubernetes " + kubetest.KubeVersion + "), RBAC ok"; len(r.Problems) != 0 || len(r.Contexts) != 1 || r.Contexts[0] != want {
		t.Errorf("check with the Role: contexts %q, problems %q; want %q", r.Contexts, r.Problems, want)
	}

	// The same user, through the Role alone, can launch and tear down.
	e := &env{t: t, ns: []string{ns}, kubeconfig: kubeconfig}
	p := e.provider(t, func(c *Config) { c.LaunchTimeout = 0 })
	k := cp.StartKubelet(t, "node-"+ns)
	serve, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Serve(serve, ns) }()
	defer func() { stop(); <-done }()
	s := spec(7401, 1, ns, schema.Resources{})
	c := launch(t, p, s)
	if err := p.StartTask(ctx, c, provision.Task{Run: "true", Env: map[string]string{"A": "b"}}); err != nil {
		t.Errorf("StartTask with the Role: %v", err)
	}
	if err := p.Terminate(ctx, s.Name); err != nil {
		t.Errorf("Terminate with the Role: %v", err)
	}

	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := (&kubetest.ControlPlane{URL: "https://127.0.0.1:1"}).Kubeconfig(bad, "x", ns, "gone"); err != nil {
		t.Fatal(err)
	}
	r, err = Check(ctx, Config{Kubeconfig: bad})
	if err != nil || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "context gone, namespace "+ns+": unreachable") {
		t.Errorf("check of an unreachable context: %q, %v", r.Problems, err)
	}
}

// TestCheckSaysAnUnstampedVersionIsUnknown: an apiserver built without a
// version stamp is not reported as Kubernetes v0.0.0.
func TestCheckSaysAnUnstampedVersionIsUnknown(t *testing.T) {
	for git, want := range map[string]string{
		"v1.37.2":                   "Kubernetes v1.37.2",
		"v0.0.0-master+$Format:%H$": `Kubernetes of unknown version: the apiserver was built without a version stamp and says "v0.0.0-master+$Format:%H$"`,
		"":                          `Kubernetes of unknown version: the apiserver was built without a version stamp and says ""`,
	} {
		if got := kubeVersion(git); got != want {
			t.Errorf("kubeVersion(%q) = %q, want %q", git, got, want)
		}
	}
}
