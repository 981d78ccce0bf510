package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	authv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sortie/provision"
	"sortie/schema"
)

// InClusterContext is the context name of the pod's own cluster when
// sortie runs in a pod with no kubeconfig.
const InClusterContext = "in-cluster"

// kubeconfig is the loaded kubeconfig, or the pod's own cluster.
type kubeconfig struct {
	raw       clientcmdapi.Config
	rules     *clientcmd.ClientConfigLoadingRules
	inCluster bool
}

// loadKubeconfig reads path, else $KUBECONFIG or ~/.kube/config; with
// none of them, inside a pod, the in-cluster config.
func loadKubeconfig(path string) (*kubeconfig, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("kubernetes.kubeconfig: %w", err)
	}
	k := &kubeconfig{raw: *raw, rules: rules}
	if len(raw.Contexts) == 0 && path == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		k.inCluster = true
	}
	return k, nil
}

func (k *kubeconfig) current() (string, error) {
	if k.inCluster {
		return InClusterContext, nil
	}
	if k.raw.CurrentContext == "" {
		if len(k.raw.Contexts) == 0 {
			return "", fmt.Errorf("kubernetes: the kubeconfig has no contexts (looked at %s); point KUBECONFIG or kubernetes.kubeconfig at one that has", strings.Join(k.rules.GetLoadingPrecedence(), ", "))
		}
		return "", fmt.Errorf("kubernetes.context: the kubeconfig has no current context; set kubernetes.context or run `kubectl config use-context NAME`")
	}
	return k.raw.CurrentContext, nil
}

// namespace is the namespace context name sets, or "".
func (k *kubeconfig) namespace(name string) string {
	if k.inCluster {
		b, _ := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
		return strings.TrimSpace(string(b))
	}
	if c, ok := k.raw.Contexts[name]; ok {
		return c.Namespace
	}
	return ""
}

// restConfig is the client config of context name.
func (k *kubeconfig) restConfig(name string) (*rest.Config, error) {
	if k.inCluster && name == InClusterContext {
		return rest.InClusterConfig()
	}
	if _, ok := k.raw.Contexts[name]; !ok {
		return nil, fmt.Errorf("kubernetes: context %q is not in the kubeconfig (%s); fix kubernetes.context or kubernetes.allowed_contexts", name, contextList(k.raw))
	}
	return clientcmd.NewNonInteractiveClientConfig(k.raw, name, &clientcmd.ConfigOverrides{}, k.rules).ClientConfig()
}

func contextList(raw clientcmdapi.Config) string {
	return "it has " + listOf(slices.Collect(maps.Keys(raw.Contexts)))
}

// kubeContext is one context's clients and its namespaces' informers.
// Only the API groups sortie uses are linked (core, authorization), not
// client-go's whole clientset and informer factory.
type kubeContext struct {
	name string
	core corev1client.CoreV1Interface
	auth authv1client.AuthorizationV1Interface
	disc discovery.ServerVersionInterface
	// seen is told of every pod the namespace's informer adds or changes,
	// with the namespace's cached parents.
	seen func(ns string, pod *corev1.Pod, parents corelisters.ConfigMapLister)

	mu       sync.Mutex
	watchers map[string]*watcher // by namespace
}

// watcher is one namespace's shared informers: sortie's pods, and their
// parent ConfigMaps.
type watcher struct {
	stopCh  chan struct{}
	pods    corelisters.PodLister
	parents corelisters.ConfigMapLister
	synced  []cache.InformerSynced
}

// kubeContext returns context name's client, made on first use.
func (p *Provider) kubeContext(name string) (*kubeContext, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("kubernetes provider is closed")
	}
	if c, ok := p.contexts[name]; ok {
		return c, nil
	}
	rc, err := p.kube.restConfig(name)
	if err != nil {
		return nil, provision.Prechecks(err)
	}
	if calls := p.cfg.Calls; calls != nil {
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return counted{rt: rt, calls: calls} })
	}
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, provision.Prechecks(fmt.Errorf("kubernetes context %s: %w", name, err))
	}
	auth, err := authv1client.NewForConfig(rc)
	if err != nil {
		return nil, provision.Prechecks(fmt.Errorf("kubernetes context %s: %w", name, err))
	}
	disc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, provision.Prechecks(fmt.Errorf("kubernetes context %s: %w", name, err))
	}
	c := &kubeContext{name: name, core: core, auth: auth, disc: disc, watchers: map[string]*watcher{},
		seen: func(ns string, pod *corev1.Pod, parents corelisters.ConfigMapLister) {
			p.podSeen(schema.Placement{Cloud: CloudName, Region: name, Zone: ns}, pod, parents)
		}}
	p.contexts[name] = c
	return c, nil
}

// watch returns namespace ns's informers, started on first use, once
// their caches are filled.
func (c *kubeContext) watch(ctx context.Context, ns string) (*watcher, error) {
	c.mu.Lock()
	w, ok := c.watchers[ns]
	if !ok {
		managed := func(o *metav1.ListOptions) { o.LabelSelector = labels.Set{provision.TagManaged: "true"}.String() }
		indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		pods := cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(c.core.RESTClient(), "pods", ns, managed),
			&corev1.Pod{}, 0, indexers)
		parents := cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(c.core.RESTClient(), "configmaps", ns, managed),
			&corev1.ConfigMap{}, 0, indexers)
		w = &watcher{stopCh: make(chan struct{}), pods: corelisters.NewPodLister(pods.GetIndexer()),
			parents: corelisters.NewConfigMapLister(parents.GetIndexer()),
			synced:  []cache.InformerSynced{pods.HasSynced, parents.HasSynced}}
		seen := func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				c.seen(ns, pod, w.parents)
			}
		}
		_, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }})
		if err != nil {
			c.mu.Unlock()
			return nil, fmt.Errorf("watch pods in %s/%s: %w", c.name, ns, err)
		}
		go pods.Run(w.stopCh)
		go parents.Run(w.stopCh)
		c.watchers[ns] = w
	}
	c.mu.Unlock()
	if err := w.waitSynced(ctx); err != nil {
		return nil, fmt.Errorf("watch pods in %s/%s: %w", c.name, ns, err)
	}
	return w, nil
}

func (w *watcher) waitSynced(ctx context.Context) error {
	for {
		done := true
		for _, s := range w.synced {
			done = done && s()
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the informer's first list: %w (is the context reachable? see `sortie check`)", ctx.Err())
		case <-w.stopCh:
			return errors.New("informer stopped")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *kubeContext) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.watchers {
		close(w.stopCh)
	}
	c.watchers = map[string]*watcher{}
}

// clusterPods are the pods of cluster name in the watcher's cache.
func (w *watcher) clusterPods(name string) ([]*corev1.Pod, error) {
	return w.pods.List(labels.SelectorFromSet(labels.Set{provision.TagCluster: name}))
}

// counted tells calls of every request to the API: "VERB RESOURCE".
type counted struct {
	rt    http.RoundTripper
	calls provision.APICalls
}

func (c counted) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil && resp.StatusCode >= 400 {
		c.calls(req.Method+" "+resourceOf(req.URL.Path), fmt.Errorf("HTTP %d", resp.StatusCode))
	} else {
		c.calls(req.Method+" "+resourceOf(req.URL.Path), err)
	}
	return resp, err
}

// resourceOf names the kind of object a request path is about:
// /api/v1/namespaces/ns/pods/name/status -> pods/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	return parts[len(parts)-1]
}
