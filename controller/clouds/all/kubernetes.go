package all

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/provision"
	"sortie/provision/kubernetes"
)

// Kubernetes is pods in the contexts and namespaces of the kubernetes:
// section. Credentials are the kubeconfig's (or the pod's own service
// account).
func Kubernetes() clouds.Cloud {
	cloud := clouds.Kubernetes()
	cloud.Open = func(ctx context.Context, cfg config.Config, log *slog.Logger) (provision.Provider, error) {
		c := KubernetesConfig(cfg)
		c.Calls, c.Logger = provision.APICallsFrom(ctx), log
		return kubernetes.New(ctx, c)
	}
	cloud.Check = func(ctx context.Context, cfg config.Config) clouds.Check {
		// What a launch would refuse the cloud for, and then nothing
		// asked of the cloud.
		if _, err := cloud.Enabled(cfg, clouds.Machine{}); err != nil {
			return clouds.NewCheck([]string{err.Error()}, nil)
		}
		r, err := kubernetes.Check(ctx, KubernetesConfig(cfg))
		out := clouds.NewCheck(r.Problems, err)
		out.Details = append(out.Details, r.Contexts...)
		return out
	}
	return cloud
}

// KubernetesConfig maps the kubernetes: section onto the provider's config.
func KubernetesConfig(cfg config.Config) kubernetes.Config {
	k := cfg.Kubernetes
	var tolerations []corev1.Toleration
	for _, t := range k.SpotTolerations {
		tolerations = append(tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator),
			Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	var shared map[string]kubernetes.SharedGPU
	for name, g := range k.SharedGPUs {
		if shared == nil {
			shared = map[string]kubernetes.SharedGPU{}
		}
		shared[name] = kubernetes.SharedGPU{Resource: corev1.ResourceName(g.Resource), PerGPU: g.PerGPU}
	}
	return kubernetes.Config{
		Kubeconfig: k.Kubeconfig, Context: k.Context, AllowedContexts: k.AllowedContexts,
		Namespace: k.Namespace, AllowedNamespaces: k.AllowedNamespaces, Image: k.Image,
		ProvisionTimeout: k.ProvisionTimeout.D(), LaunchTimeout: k.LaunchTimeout.D(),
		SpotNodeSelector: k.SpotNodeSelector, SpotTolerations: tolerations, AcceleratorLabel: k.AcceleratorLabel,
		SharedGPUs: shared,
	}
}
