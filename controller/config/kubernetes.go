package config

import (
	"fmt"
	"slices"

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
	return out
}
