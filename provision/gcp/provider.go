// Package gcp is sortie's Compute Engine backend: it launches on-demand and
// spot VMs through cloud.google.com/go/compute (REST), reports their states
// with one aggregated list per Status call, tells preemptions from
// deletions by the operations Compute Engine records, and reaches the VMs
// over SSH with a key it puts in their metadata.
//
// It must not import sortie/controller/...: a provider knows nothing of jobs.
package gcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"

	"sortie/provision"
	"sortie/provision/gcp/adc"
	"sortie/provision/vm"
)

// CloudName is the name of this backend in resources.cloud.
const CloudName = "gcp"

// DefaultRegions are the regions considered when the config names none.
func DefaultRegions() []string { return []string{"us-central1", "us-east1", "us-west1"} }

// DefaultImage is the boot image when a task names none: Canonical's
// Ubuntu 22.04 LTS family, which always points at the newest build.
const DefaultImage = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts"

// DefaultServiceAccount names, in an instance's serviceAccounts, the
// project's Compute Engine default service account.
const DefaultServiceAccount = "default"

// StorageScope is the OAuth scope a VM of a task with buckets gets: read
// and write Cloud Storage, as far as its service account's roles allow.
const StorageScope = "https://www.googleapis.com/auth/devstorage.read_write"

// serviceAccountRE is a service account's email.
var serviceAccountRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*@[a-z0-9][a-z0-9.:-]*\.gserviceaccount\.com$`)

// Termination actions for spot VMs: what Compute Engine does to a VM it
// preempts.
const (
	TerminateDelete = "DELETE"
	TerminateStop   = "STOP"
)

// Config configures the Compute Engine backend. Home is required, and a
// project must come from Project or the environment (see Check).
type Config struct {
	// Home is SORTIE_HOME: the SSH key and pinned host keys live in Home/keys.
	Home string
	// Project is the Google Cloud project; empty means the one application
	// default credentials or GOOGLE_CLOUD_PROJECT name.
	Project string
	// Regions are the regions sortie may launch in, in order of preference;
	// empty means DefaultRegions.
	Regions []string
	// Endpoint overrides the API's base URL (an emulator or a fake); when
	// set, requests carry no credentials.
	Endpoint string
	// BillingEndpoint overrides the Cloud Billing Catalog API's base URL
	// (a stand-in, for tests); when set, its requests carry no
	// credentials.
	BillingEndpoint string
	// SSHUser is the account the VMs create for sortie's key (through the
	// ssh-keys metadata); empty means "sortie".
	SSHUser string
	// ProxyCommand, when set, reaches VMs as OpenSSH's ProxyCommand does
	// (%h, %p, %r), e.g. through a bastion or IAP.
	ProxyCommand string
	// NodeDirRoot is the directory on the VMs under which each node's own
	// directory (named after its instance id) lives; empty means
	// /home/<SSHUser>/sortie (/root/sortie for root).
	NodeDirRoot string
	// TerminationAction is what Compute Engine does to a preempted spot VM:
	// TerminateDelete (default) or TerminateStop.
	TerminationAction string
	// ServiceAccount is the service account (its email) the VMs of a task
	// with buckets run as, with the Cloud Storage read-write scope, so that
	// their sync program reaches the buckets; empty means "default", the
	// project's Compute Engine default service account.
	ServiceAccount string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// StatusMaxAge is how long one aggregated list of the project's VMs
	// (and, when a VM is stopped or missing, of its operations) answers
	// every Status call: the controller sets its poll interval, so that
	// the ticks' shards together cost one list per poll interval. Zero
	// means every Status lists afresh.
	StatusMaxAge time.Duration
	// Logger receives launch and termination events; nil logs nothing.
	Logger *slog.Logger
	// PollInterval is how often operations and booting VMs are checked;
	// zero means 2s.
	PollInterval time.Duration
	// OperationTimeout bounds the wait for one operation; zero means 5 minutes.
	OperationTimeout time.Duration
	// LaunchTimeout bounds how long Launch waits for VMs to run and answer
	// SSH; zero means 10 minutes.
	LaunchTimeout time.Duration
	// SkipSSHCheck makes Launch return once the VMs are RUNNING, without
	// waiting for SSH to answer.
	SkipSSHCheck bool
	// ClientOptions are added to the API clients' options (a credentials
	// file, a quota project).
	ClientOptions []option.ClientOption
	// Calls, when set, is told of every call to the Compute Engine API
	// (the controller's metrics).
	Calls provision.APICalls
}

// Provider is the Compute Engine backend. It is safe for concurrent use.
type Provider struct {
	cfg      Config
	api      computeAPI
	ssh      *vm.Access
	log      *slog.Logger
	launches vm.NameLocks // one launch of a cluster name at a time
	// vms and ops share Status's lists of the project's VMs and of its
	// preemptions and deletions for StatusMaxAge.
	vms *vm.Shared[[]*computepb.Instance]
	ops *vm.Shared[*evidence]

	mu       sync.Mutex
	zones    map[string]string        // zone -> region, once loaded
	types    map[string][]machineType // zone -> offered types, once loaded
	addrs    map[string]string        // instance id -> SSH address
	deleting map[string]bool          // instance ids sortie asked to delete
	tags     map[string]resolvedTag   // SkyPilot image tag -> the image it resolved to
}

var _ provision.Provider = (*Provider)(nil)

// New builds the API clients and loads sortie's SSH key, creating it on
// first use. Credentials are application default credentials unless
// Endpoint is set.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	return build(ctx, cfg, osEnv())
}

// build is New on a machine described by e.
func build(ctx context.Context, cfg Config, e machineEnv) (*Provider, error) {
	if cfg.Home == "" {
		return nil, fmt.Errorf("gcp provider: Config.Home is empty; set it to SORTIE_HOME")
	}
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Project == "" {
		found := adc.Find(ctx, e, cfg.Endpoint, cfg.Project)
		if found.Project == "" {
			return nil, provision.Prechecks(fmt.Errorf("gcp provider: no project: set gcp.project in config.yaml or GOOGLE_CLOUD_PROJECT"))
		}
		cfg.Project = found.Project
	}
	opts := slices.Clone(cfg.ClientOptions)
	if cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.Endpoint), option.WithoutAuthentication())
	}
	api, err := newClients(ctx, opts...)
	if err != nil {
		return nil, provision.Prechecks(fmt.Errorf("gcp provider: create Compute Engine clients: %w (see `sortie check`)", err))
	}
	p, err := newProvider(cfg, api)
	if err != nil {
		api.Close()
		return nil, err
	}
	return p, nil
}

// newProvider completes a provider over api; cfg has its defaults.
func newProvider(cfg Config, api computeAPI) (*Provider, error) {
	access, err := vm.Open(cfg.Home, vm.Config{User: cfg.SSHUser, ProxyCommand: cfg.ProxyCommand,
		NodeDirRoot: cfg.NodeDirRoot, HostIDPrefix: "gce-"})
	if err != nil {
		return nil, fmt.Errorf("gcp provider: %w", err)
	}
	if cfg.Calls != nil {
		api = counted{api: api, calls: cfg.Calls}
	}
	return &Provider{
		cfg:      cfg,
		api:      api,
		ssh:      access,
		log:      cfg.Logger,
		addrs:    map[string]string{},
		deleting: map[string]bool{}, tags: map[string]resolvedTag{},
		vms: &vm.Shared[[]*computepb.Instance]{MaxAge: cfg.StatusMaxAge, Now: cfg.Now},
		ops: &vm.Shared[*evidence]{MaxAge: cfg.StatusMaxAge, Now: cfg.Now},
	}, nil
}

func withDefaults(cfg Config) (Config, error) {
	if len(cfg.Regions) == 0 {
		cfg.Regions = DefaultRegions()
	}
	cfg.Regions = slices.Clone(cfg.Regions)
	if cfg.SSHUser == "" {
		cfg.SSHUser = "sortie"
	}
	switch cfg.TerminationAction {
	case "":
		cfg.TerminationAction = TerminateDelete
	case TerminateDelete, TerminateStop:
	default:
		return cfg, provision.Prechecks(fmt.Errorf("gcp.termination_action: %q is not a termination action; use %s or %s",
			cfg.TerminationAction, TerminateDelete, TerminateStop))
	}
	switch {
	case cfg.ServiceAccount == "":
		cfg.ServiceAccount = DefaultServiceAccount
	case cfg.ServiceAccount != DefaultServiceAccount && !serviceAccountRE.MatchString(cfg.ServiceAccount):
		return cfg, provision.Prechecks(fmt.Errorf("gcp.service_account: %q is not a service account; give its email (NAME@PROJECT.iam.gserviceaccount.com) or %s, the project's Compute Engine default",
			cfg.ServiceAccount, DefaultServiceAccount))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.OperationTimeout <= 0 {
		cfg.OperationTimeout = 5 * time.Minute
	}
	if cfg.LaunchTimeout <= 0 {
		cfg.LaunchTimeout = 10 * time.Minute
	}
	return cfg, nil
}

// Name implements provision.Provider.
func (p *Provider) Name() string { return CloudName }

// logger is the logger of a call about one cluster made under ctx: the
// step's it is made for, when ctx carries one (provision.Logger), else
// the provider's own.
func (p *Provider) logger(ctx context.Context) *slog.Logger {
	return provision.Logger(ctx, p.log, CloudName)
}

// Project is the project the provider works in.
func (p *Provider) Project() string { return p.cfg.Project }

// Close releases the API clients and closes the SSH connections to the
// nodes.
func (p *Provider) Close() error { return errors.Join(p.ssh.Close(), p.api.Close()) }

// Runner implements provision.Provider: SSH to the node's external address
// (else its internal one), through the proxy command when one is set.
func (p *Provider) Runner(ctx context.Context, c *provision.Cluster, rank int) (provision.Runner, error) {
	return p.ssh.Runner(ctx, c, rank, func(ctx context.Context, n provision.Node) (string, error) {
		return p.sshAddress(ctx, c.Placement.Zone, instanceName(c.Name, rank), n.InstanceID)
	})
}

// sshAddress is the address SSH reaches a VM at, remembered from the last
// list, else looked up.
func (p *Provider) sshAddress(ctx context.Context, zone, name, instanceID string) (string, error) {
	p.mu.Lock()
	addr, ok := p.addrs[instanceID]
	p.mu.Unlock()
	if ok {
		return addr, nil
	}
	in, err := p.api.GetInstance(ctx, p.cfg.Project, zone, name)
	if err != nil {
		return "", classify(fmt.Errorf("get %s in %s: %w", name, zone, err))
	}
	if fmt.Sprint(in.GetId()) != instanceID {
		return "", fmt.Errorf("instance %s in %s is now %d, not %s: the node was replaced", name, zone, in.GetId(), instanceID)
	}
	p.remember(in)
	if addr := sshAddr(in); addr != "" {
		return addr, nil
	}
	return "", fmt.Errorf("instance %s in %s has no IP address", name, zone)
}
