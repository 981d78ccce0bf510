// Package kubernetes is sortie's Kubernetes backend: a cluster is one pod
// per node rank, created through client-go in a namespace of a kubeconfig
// context, owned by a ConfigMap named after the cluster (its parent:
// deleting it deletes the pods). Pod states come from one shared informer
// per context and namespace (a watch, not a poll per job); a pod the
// cluster evicts or deletes is a preemption, a pod left Unschedulable
// longer than ProvisionTimeout a capacity error.
//
// A pod runs the task as its container command (see task.go): it waits
// for the task in its parent ConfigMap, runs setup then run, and writes
// the phase that ended into its termination message. Exit codes come from
// the pod's container status, logs from the pod log API; nothing of
// sortie's is needed inside the image.
//
// It must not import sortie/controller/...: a provider knows nothing of jobs.
package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"sortie/provision"
	"sortie/provision/vm"
	"sortie/schema"
)

// CloudName is the name of this backend in resources.cloud.
const CloudName = "kubernetes"

// DefaultImage is the container image when a task names none and the
// config sets no kubernetes.image: the task needs a POSIX shell.
const DefaultImage = "ubuntu:22.04"

// DefaultAcceleratorLabel is the node label that names a node's GPU model,
// as SkyPilot labels GPU nodes (value: the accelerator's name, lower case).
const DefaultAcceleratorLabel = "skypilot.co/accelerator"

// GPUResource is the extended resource a GPU is requested as.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// Config configures the Kubernetes backend.
type Config struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, else
	// ~/.kube/config, as kubectl reads them. With neither, inside a pod,
	// the pod's service account is used (the context is "in-cluster").
	Kubeconfig string
	// Context is the context a task that names none runs in; empty means
	// the kubeconfig's current context.
	Context string
	// AllowedContexts are the contexts placements may use, in order of
	// preference; empty means Context alone.
	AllowedContexts []string
	// Namespace is where pods go; empty means the context's namespace,
	// else "default".
	Namespace string
	// AllowedNamespaces are the namespaces placements may use in each
	// context, in order; empty means Namespace alone.
	AllowedNamespaces []string
	// Image is the container image of a task with no image_id; empty
	// means DefaultImage.
	Image string
	// ProvisionTimeout is how long a pod may stay Unschedulable before
	// the launch is a capacity error (the next placement is tried); zero
	// means 10 seconds, as SkyPilot's kubernetes.provision_timeout.
	ProvisionTimeout time.Duration
	// LaunchTimeout bounds the wait for every pod to run; zero means 10
	// minutes.
	LaunchTimeout time.Duration
	// SpotNodeSelector and SpotTolerations place a use_spot task's pods on
	// spot nodes: the node labels they must carry, the taints they bear.
	SpotNodeSelector map[string]string
	SpotTolerations  []corev1.Toleration
	// AcceleratorLabel is the node label naming a node's GPU model; empty
	// means DefaultAcceleratorLabel.
	AcceleratorLabel string
	// SharedGPUs say how the cluster shares an accelerator, by its name:
	// a task's fraction of one (A100:0.5) requests share x PerGPU units
	// of Resource; an accelerator not named here is refused a fraction.
	SharedGPUs map[string]SharedGPU
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval is how often Launch looks at its pods in the informer's
	// cache; zero means one second.
	PollInterval time.Duration
	// Logger receives launch and termination events; nil logs nothing.
	Logger *slog.Logger
	// Calls, when set, is told of every call to the Kubernetes API.
	Calls provision.APICalls
}

// SharedGPU is a GPU the cluster shares: the extended resource a pod
// requests (time-slicing's nvidia.com/gpu.shared, a MIG profile's
// nvidia.com/mig-3g.20gb) and how many units of it one GPU is.
type SharedGPU struct {
	Resource corev1.ResourceName
	PerGPU   int
}

// Provider is the Kubernetes backend. It is safe for concurrent use.
type Provider struct {
	cfg      Config
	kube     *kubeconfig
	launches vm.NameLocks

	mu       sync.Mutex
	contexts map[string]*kubeContext // by context name
	deleting map[string]bool         // clusters sortie asked to delete, by placeKey
	stopped  map[string]bool         // pods whose task sortie stopped, by placeKey
	taken    map[string]*takenLog    // logs of pods the cluster took away, by placeKey
	closed   bool

	bg      context.Context // the reads of taken pods' logs; ended by Close
	stopBg  context.CancelFunc
	reading sync.WaitGroup
}

var (
	_ provision.Provider   = (*Provider)(nil)
	_ provision.TaskRunner = (*Provider)(nil)
)

// New reads the kubeconfig (nothing is asked of a cluster until a
// placement needs it).
func New(_ context.Context, cfg Config) (*Provider, error) {
	cfg = withDefaults(cfg)
	// client-go logs through klog, which would print plain text on
	// stderr: its lines go to the provider's logger, as JSON in the
	// controller's log. klog is one per process, as the controller's log is.
	klog.SetSlogLogger(cfg.Logger.With("source", "client-go"))
	p := &Provider{cfg: cfg, contexts: map[string]*kubeContext{}, deleting: map[string]bool{}, stopped: map[string]bool{},
		taken: map[string]*takenLog{}}
	p.bg, p.stopBg = context.WithCancel(context.Background())
	k, err := loadKubeconfig(cfg.Kubeconfig)
	if err != nil {
		return nil, provision.Prechecks(err)
	}
	p.kube = k
	return p, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.ProvisionTimeout <= 0 {
		cfg.ProvisionTimeout = 10 * time.Second
	}
	if cfg.LaunchTimeout <= 0 {
		cfg.LaunchTimeout = 10 * time.Minute
	}
	if cfg.AcceleratorLabel == "" {
		cfg.AcceleratorLabel = DefaultAcceleratorLabel
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.AllowedContexts = slices.Clone(cfg.AllowedContexts)
	cfg.AllowedNamespaces = slices.Clone(cfg.AllowedNamespaces)
	return cfg
}

// Name implements provision.Provider.
func (p *Provider) Name() string { return CloudName }

// logger is the logger of a call about one cluster made under ctx: the
// step's it is made for, when ctx carries one (provision.Logger), else
// the provider's own.
func (p *Provider) logger(ctx context.Context) *slog.Logger {
	return provision.Logger(ctx, p.cfg.Logger, CloudName)
}

// contextNames are the contexts placements may use, in order.
func (p *Provider) contextNames() ([]string, error) {
	if len(p.cfg.AllowedContexts) > 0 {
		return p.cfg.AllowedContexts, nil
	}
	if p.cfg.Context != "" {
		return []string{p.cfg.Context}, nil
	}
	cur, err := p.kube.current()
	if err != nil {
		return nil, provision.Prechecks(err)
	}
	return []string{cur}, nil
}

// namespaces are the namespaces placements may use in context ctxName.
func (p *Provider) namespaces(ctxName string) []string {
	if len(p.cfg.AllowedNamespaces) > 0 {
		return p.cfg.AllowedNamespaces
	}
	if p.cfg.Namespace != "" {
		return []string{p.cfg.Namespace}
	}
	if ns := p.kube.namespace(ctxName); ns != "" {
		return []string{ns}
	}
	return []string{"default"}
}

// Placements implements provision.Provider: each allowed context (the
// region) and namespace (the zone), contexts first. A region or zone the
// task pins must be one of them.
func (p *Provider) Placements(_ context.Context, r schema.Resources) ([]schema.Placement, error) {
	ctxs, err := p.contextNames()
	if err != nil {
		return nil, err
	}
	if r.Region != "" {
		if !slices.Contains(ctxs, r.Region) {
			return nil, provision.Prechecks(fmt.Errorf("resources.region: context %q is not one sortie may use (%s); add it to kubernetes.allowed_contexts, or name one of those",
				r.Region, listOf(ctxs)))
		}
		ctxs = []string{r.Region}
	}
	var out []schema.Placement
	for _, c := range ctxs {
		nss := p.namespaces(c)
		if r.Zone != "" {
			if !slices.Contains(nss, r.Zone) {
				return nil, provision.Prechecks(fmt.Errorf("resources.zone: namespace %q is not one sortie may use in context %s (%s); add it to kubernetes.allowed_namespaces, or name one of those",
					r.Zone, c, listOf(nss)))
			}
			nss = []string{r.Zone}
		}
		for _, ns := range nss {
			out = append(out, schema.Placement{Cloud: CloudName, Region: c, Zone: ns})
		}
	}
	return out, nil
}

// allPlacements are every context and namespace sortie may have launched
// in: where Status and List look.
func (p *Provider) allPlacements() ([]schema.Placement, error) {
	return p.Placements(context.Background(), schema.Resources{})
}

// Close stops the informers and the reads of taken pods' logs.
func (p *Provider) Close() error {
	p.mu.Lock()
	p.closed = true
	for _, c := range p.contexts {
		c.stop()
	}
	p.contexts = map[string]*kubeContext{}
	p.mu.Unlock()
	p.stopBg()
	p.reading.Wait()
	return nil
}

// placeKey names cluster name at placement at.
func placeKey(at schema.Placement, name string) string {
	return at.Region + "\x00" + at.Zone + "\x00" + name
}

// markDeleting records whether sortie asked to delete name at at.
func (p *Provider) markDeleting(at schema.Placement, name string, deleting bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if deleting {
		p.deleting[placeKey(at, name)] = true
	} else {
		delete(p.deleting, placeKey(at, name))
	}
	// A cluster launched or torn down again has no pod stopped on its own,
	// nor any taken away whose log is worth holding.
	for k := range p.stopped {
		if strings.HasPrefix(k, placeKey(at, name)+"-") {
			delete(p.stopped, k)
		}
	}
	for k, t := range p.taken {
		if t.cluster == name && strings.HasPrefix(k, placeKey(at, name)+"-") {
			t.cancel()
			delete(p.taken, k)
		}
	}
}

// markStopped records that sortie stopped pod's task at at.
func (p *Provider) markStopped(at schema.Placement, pod string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped[placeKey(at, pod)] = true
}

// wasStopped says whether sortie stopped pod's task at at.
func (p *Provider) wasStopped(at schema.Placement, pod string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped[placeKey(at, pod)]
}

func listOf(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
