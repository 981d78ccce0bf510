package config

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"sortie/schema"
)

// KubernetesConfig is the kubernetes: section.
type KubernetesConfig struct {
	// Kubeconfig is the kubeconfig file; "" is $KUBECONFIG, else
	// ~/.kube/config (in a pod with neither: the pod's own cluster).
	Kubeconfig string `json:"kubeconfig"`
	// Context is the kubeconfig context tasks run in; "" is the current one.
	Context string `json:"context"`
	// AllowedContexts are the contexts placements may use, in order
	// (SkyPilot's kubernetes.allowed_contexts); empty is Context alone.
	AllowedContexts []string `json:"allowed_contexts"`
	// Namespace is where pods go; "" is the context's, else default.
	Namespace string `json:"namespace"`
	// AllowedNamespaces are the namespaces placements may use in each
	// context, in order; empty is Namespace alone.
	AllowedNamespaces []string `json:"allowed_namespaces"`
	// Image is the container image of a task with no image_id.
	Image string `json:"image"`
	// ProvisionTimeout is how long a pod may stay unschedulable before
	// the next placement is tried (default 10s).
	ProvisionTimeout Duration `json:"provision_timeout"`
	// LaunchTimeout bounds the wait for every pod to run (default 10m).
	LaunchTimeout Duration `json:"launch_timeout"`
	// SpotNodeSelector and SpotTolerations put use_spot pods on spot nodes.
	SpotNodeSelector map[string]string      `json:"spot_node_selector"`
	SpotTolerations  []KubernetesToleration `json:"spot_tolerations"`
	// AcceleratorLabel is the node label naming a node's GPU model
	// (default skypilot.co/accelerator).
	AcceleratorLabel string `json:"accelerator_label"`
	// SharedGPUs name, by accelerator, the resource a cluster shares
	// GPUs as (time-slicing's nvidia.com/gpu.shared, a MIG profile's
	// nvidia.com/mig-3g.20gb) and how many of it one GPU is: a task's
	// fraction of one GPU (A100:0.5) asks share x per_gpu of it. An
	// accelerator not named here is refused a fraction.
	SharedGPUs map[string]KubernetesSharedGPU `json:"shared_gpus"`
	// Prices are what a pod's node costs (zero by default), so that a
	// team can charge its own cluster's GPUs.
	Prices ResourcePrices `json:"prices"`
}

// KubernetesToleration is one of kubernetes.spot_tolerations, as a pod
// spec writes it.
type KubernetesToleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
	Effect   string `json:"effect"`
}

// KubernetesSharedGPU is one of kubernetes.shared_gpus.
type KubernetesSharedGPU struct {
	// Resource is the extended resource a pod requests (e.g.
	// nvidia.com/gpu.shared).
	Resource string `json:"resource"`
	// PerGPU is how many units of Resource one GPU is.
	PerGPU int `json:"per_gpu"`
}

// SharedGPU is the shared resource and the units of it a fraction of one
// accelerator asks, or why none: no resource is configured for it, or the
// fraction is not a whole number of units.
func (k KubernetesConfig) SharedGPU(accelerator string, share float64) (resource string, units int, problem string) {
	for name, g := range k.SharedGPUs {
		if !strings.EqualFold(name, accelerator) {
			continue
		}
		n := share * float64(g.PerGPU)
		whole := math.Round(n)
		if whole < 1 || math.Abs(n-whole) > 1e-9 {
			return "", 0, fmt.Sprintf("is %g of the %d units of %s one GPU is (kubernetes.shared_gpus.%s.per_gpu), not a whole number; ask a multiple of 1/%d of a GPU",
				n, g.PerGPU, g.Resource, name, max(g.PerGPU, 1))
		}
		return g.Resource, int(whole), ""
	}
	return "", 0, fmt.Sprintf("asks a fraction of a GPU, and kubernetes.shared_gpus in config.yaml names no shared resource for %s; name the cluster's time-slicing or MIG resource there (e.g. {%s: {resource: nvidia.com/gpu.shared, per_gpu: 2}}), or ask a whole count",
		accelerator, accelerator)
}

// extendedResource is an extended resource's name: a domain, a slash, a
// name (nvidia.com/gpu.shared).
var extendedResource = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// kubernetesProblems checks the tolerations' operators and effects.
func (cfg *Config) kubernetesProblems(lines map[string]int) []schema.Problem {
	var out []schema.Problem
	for i, t := range cfg.Kubernetes.SpotTolerations {
		key := fmt.Sprintf("kubernetes.spot_tolerations[%d]", i)
		line := lines[key]
		if !slices.Contains([]string{"", "Equal", "Exists"}, t.Operator) {
			out = append(out, schema.Problem{Path: key + ".operator", Line: line, Message: fmt.Sprintf("%q is not a toleration operator; use Equal or Exists", t.Operator)})
		}
		if !slices.Contains([]string{"", "NoSchedule", "PreferNoSchedule", "NoExecute"}, t.Effect) {
			out = append(out, schema.Problem{Path: key + ".effect", Line: line, Message: fmt.Sprintf("%q is not a taint effect; use NoSchedule, PreferNoSchedule or NoExecute (or leave it out for all)", t.Effect)})
		}
		if t.Operator == "Exists" && t.Value != "" {
			out = append(out, schema.Problem{Path: key + ".value", Line: line, Message: fmt.Sprintf("%q: a toleration with operator Exists has no value; drop it, or use operator Equal", t.Value)})
		}
		if t.Key == "" && t.Operator != "Exists" {
			out = append(out, schema.Problem{Path: key + ".key", Line: line, Message: "empty; name the taint's key (only operator Exists may leave it out, to tolerate every taint)"})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Kubernetes.SharedGPUs)) {
		g := cfg.Kubernetes.SharedGPUs[name]
		key := "kubernetes.shared_gpus." + name
		line := lines[key]
		if !extendedResource.MatchString(g.Resource) {
			out = append(out, schema.Problem{Path: key + ".resource", Line: line, Message: fmt.Sprintf("%q is not a resource name; give the cluster's shared GPU resource, e.g. nvidia.com/gpu.shared or nvidia.com/mig-3g.20gb", g.Resource)})
		}
		if g.PerGPU < 1 {
			out = append(out, schema.Problem{Path: key + ".per_gpu", Line: line, Message: fmt.Sprintf("%d is not a count; give how many units of the resource one GPU is, 1 or more (e.g. 2 for time-slicing with 2 replicas)", g.PerGPU)})
		}
	}
	return out
}
