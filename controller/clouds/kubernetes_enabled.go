package clouds

import (
	"fmt"
	"path/filepath"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"sortie/controller/config"
)

// kubeconfigFile is the part of a kubeconfig kubernetesCredentials reads.
type kubeconfigFile struct {
	CurrentContext string `yaml:"current-context"`
	Contexts       []struct {
		Name string `yaml:"name"`
	} `yaml:"contexts"`
}

// kubernetesCredentials finds the kubeconfig the provider would load, as
// client-go's loading rules do: kubernetes.kubeconfig, else the files of
// $KUBECONFIG, else ~/.kube/config; with no context in any of them, the
// pod's own cluster when sortie runs in a pod. The first file that names
// a current context sets it, and a context is needed: kubernetes.context,
// kubernetes.allowed_contexts or the current one.
func kubernetesCredentials(cfg config.Config, m Machine) (string, error) {
	k := cfg.Kubernetes
	var paths []string
	switch {
	case k.Kubeconfig != "":
		paths = []string{k.Kubeconfig}
	case m.getenv("KUBECONFIG") != "":
		paths = filepath.SplitList(m.getenv("KUBECONFIG"))
	default:
		paths = []string{filepath.Join(m.home(), ".kube", "config")}
	}
	var found []string
	contexts := map[string]bool{}
	current := ""
	for _, p := range paths {
		b, err := m.readFile(p)
		if err != nil {
			if k.Kubeconfig != "" {
				return "", fmt.Errorf("kubernetes.kubeconfig in config.yaml: %s cannot be read: %v; fix the path", p, err)
			}
			continue
		}
		var f kubeconfigFile
		if err := yaml.Unmarshal(b, &f); err != nil {
			return "", fmt.Errorf("kubeconfig %s is not a kubeconfig: %v; fix it or point KUBECONFIG or kubernetes.kubeconfig elsewhere", p, err)
		}
		found = append(found, p)
		for _, c := range f.Contexts {
			contexts[c.Name] = true
		}
		if current == "" {
			current = f.CurrentContext
		}
	}
	if len(contexts) == 0 {
		if k.Kubeconfig == "" && m.getenv("KUBERNETES_SERVICE_HOST") != "" {
			return "the pod's own cluster (in-cluster)", nil
		}
		return "", fmt.Errorf("no kubeconfig with a context (looked at %s); point kubernetes.kubeconfig in config.yaml or KUBECONFIG at one, or run sortie in a pod",
			strings.Join(paths, ", "))
	}
	if k.Context == "" && len(k.AllowedContexts) == 0 && current == "" {
		return "", fmt.Errorf("the kubeconfig (%s) has no current context; set kubernetes.context in config.yaml or run `kubectl config use-context NAME`",
			strings.Join(found, ", "))
	}
	return "kubeconfig " + strings.Join(found, ", "), nil
}
