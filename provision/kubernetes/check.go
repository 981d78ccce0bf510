package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Permission is one thing sortie does in a namespace: a verb on a
// resource (and subresource). The README's Role grants exactly these.
type Permission struct {
	Resource, Subresource string
	Verbs                 []string
}

// Permissions are what sortie needs in each namespace it uses.
func Permissions() []Permission {
	return []Permission{
		{Resource: "pods", Verbs: []string{"create", "get", "list", "watch", "delete", "deletecollection"}},
		{Resource: "pods", Subresource: "log", Verbs: []string{"get"}},
		{Resource: "configmaps", Verbs: []string{"create", "get", "list", "watch", "update", "delete"}},
		{Resource: "secrets", Verbs: []string{"create", "update", "delete"}},
	}
}

// CheckResult is what `sortie check` says of Kubernetes: one line per
// context and namespace placements may use, and what is wrong.
type CheckResult struct {
	Contexts []string
	Problems []string
}

// Check asks every context placements may use whether it answers, and
// whether sortie may do what it needs in each namespace (a
// SelfSubjectAccessReview per permission).
func Check(ctx context.Context, cfg Config) (CheckResult, error) {
	p, err := New(ctx, cfg)
	if err != nil {
		return CheckResult{}, err
	}
	defer p.Close()
	places, err := p.allPlacements()
	if err != nil {
		return CheckResult{}, err
	}
	var r CheckResult
	for _, at := range places {
		line, problems := p.checkOne(ctx, at.Region, at.Zone)
		r.Contexts = append(r.Contexts, line)
		r.Problems = append(r.Problems, problems...)
	}
	return r, nil
}

func (p *Provider) checkOne(ctx context.Context, ctxName, ns string) (string, []string) {
	where := fmt.Sprintf("context %s, namespace %s", ctxName, ns)
	kc, err := p.kubeContext(ctxName)
	if err != nil {
		return where + ": unusable", []string{fmt.Sprintf("%s: %v", where, err)}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := kc.disc.ServerVersion()
	if err != nil {
		return where + ": unreachable", []string{fmt.Sprintf("%s: unreachable: %v", where, err)}
	}
	var missing []string
	for _, perm := range Permissions() {
		for _, verb := range perm.Verbs {
			review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: perm.Resource, Subresource: perm.Subresource}}}
			got, err := kc.auth.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				return where + ": reachable", []string{fmt.Sprintf("%s: cannot ask what sortie may do: %v", where, err)}
			}
			if !got.Status.Allowed {
				res := perm.Resource
				if perm.Subresource != "" {
					res += "/" + perm.Subresource
				}
				missing = append(missing, verb+" "+res)
			}
		}
	}
	line := fmt.Sprintf("%s: reachable (%s)", where, kubeVersion(v.GitVersion))
	if len(missing) > 0 {
		return line, []string{fmt.Sprintf("%s: sortie may not %s; bind the Role in the README's Kubernetes section", where, strings.Join(missing, ", "))}
	}
	return line + ", RBAC ok", nil
}

// kubeVersion names the version an apiserver answers, or says it was
// built without one: a build that sets no -ldflags -X version stamp
// answers a v0.0.0 placeholder.
func kubeVersion(git string) string {
	if git == "" || strings.HasPrefix(git, "v0.0.0-") {
		return fmt.Sprintf("Kubernetes of unknown version: the apiserver was built without a version stamp and says %q", git)
	}
	return "Kubernetes " + git
}
