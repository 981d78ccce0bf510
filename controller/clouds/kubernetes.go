package clouds

import (
	"sortie/controller/config"
	"sortie/schema"
)

// Kubernetes is the facts of pods in a cluster's contexts and namespaces;
// controller/clouds/all opens its provider. A task names a context as the
// region (infra: k8s/CONTEXT, slashes and all) and a namespace as the zone.
func Kubernetes() Cloud {
	return Cloud{
		Name:           "kubernetes",
		Task:           schema.Cloud{Aliases: []string{"k8s"}, WholeRegion: true, SharesAccelerators: true},
		Remote:         true,
		Enabled:        kubernetesCredentials,
		Prices:         configPrices("kubernetes", func(cfg config.Config) config.ResourcePrices { return cfg.Kubernetes.Prices }),
		PricedInConfig: true,
	}
}
