// Package aws is sortie's EC2 backend: it launches on-demand and spot
// instances through aws-sdk-go-v2, reports their states in one
// DescribeInstances per region, and reaches them over SSH.
//
// It must not import sortie/controller/...: a provider knows nothing of jobs.
package aws

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/logging"

	"sortie/provision"
	"sortie/provision/vm"
)

// CloudName is the name of this backend in resources.cloud.
const CloudName = "aws"

// DefaultRegions are the regions considered when the config names none.
func DefaultRegions() []string { return []string{"us-east-1", "us-west-2"} }

// Config configures the EC2 backend. Only Home is required.
type Config struct {
	// Home is SORTIE_HOME: the SSH key and pinned host keys live in Home/keys.
	Home string
	// Regions are the regions sortie may launch in, in order of preference;
	// empty means DefaultRegions. Status and List look in exactly these.
	Regions []string
	// Endpoint overrides the EC2 endpoint URL (an emulator, a VPC endpoint).
	Endpoint string
	// Profile is the shared-config profile; empty means the standard chain
	// (environment, AWS_PROFILE, default profile, SSO, instance role).
	Profile string
	// SSHUser logs in to the instances; empty means "ubuntu", the default
	// image's user.
	SSHUser string
	// ProxyCommand, when set, reaches instances as OpenSSH's ProxyCommand
	// does (%h, %p, %r), e.g. through a bastion.
	ProxyCommand string
	// NodeDirRoot is the directory on the instances under which each node's
	// own directory (named after its instance id) lives; empty means
	// /home/<SSHUser>/sortie (/root/sortie for root).
	NodeDirRoot string
	// InstanceProfile is the IAM instance profile (a name or an ARN) given
	// to the instances of a task with buckets, whose role may read and
	// write them; empty means sortie's own (NodeProfileName), created the
	// first time a task with buckets launches.
	InstanceProfile string
	// PricingEndpoint overrides the Price List Query API's endpoint URL
	// (a stand-in, for tests); empty means the SDK's in PricingRegion
	// (which honours AWS_ENDPOINT_URL_PRICING).
	PricingEndpoint string
	// PricingRegion is where the Price List Query API is asked (it is
	// served in us-east-1, eu-central-1 and ap-south-1); empty means
	// us-east-1.
	PricingRegion string
	// IAMEndpoint overrides the IAM endpoint URL; empty means the SDK's
	// (which honours AWS_ENDPOINT_URL_IAM).
	IAMEndpoint string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends; nil means a timer. Tests give one
	// that moves their clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives launch and termination events, and the AWS SDK's
	// own warnings; nil logs nothing.
	Logger *slog.Logger

	// Credentials replaces the standard credential chain (tests).
	Credentials awssdk.CredentialsProvider
	// RetryMaxAttempts bounds the SDK's attempts per call; zero means 3.
	// Capacity and prechecks errors are never retried by the SDK.
	RetryMaxAttempts int
	// PollInterval is how often Launch checks booting instances; zero means 5s.
	PollInterval time.Duration
	// LaunchTimeout bounds how long Launch waits for instances to run and
	// answer SSH; zero means 10 minutes.
	LaunchTimeout time.Duration
	// StatusMaxAge is how long one region's DescribeInstances answers
	// every Status call (the controller sets its poll interval); zero
	// means each Status asks afresh. Sortie's own launches and
	// terminations make the next Status ask afresh.
	StatusMaxAge time.Duration
	// Calls, when set, is told of every call to the EC2 API (the
	// controller's metrics).
	Calls provision.APICalls
}

// Provider is the EC2 backend. It is safe for concurrent use.
type Provider struct {
	cfg Config
	aws awssdk.Config
	ssh *vm.Access
	log *slog.Logger
	// launches serialises launches of one cluster name within this
	// process: moto and EC2's eventual consistency could both miss a
	// launch still in flight when the second looks for it by tag.
	launches vm.NameLocks

	mu      sync.Mutex
	clients map[string]ec2API
	iam     iamAPI

	// profileMu guards the node profile's state: made or found once per
	// provider, and when sortie made it (EC2 may not see it at once).
	profileMu     sync.Mutex
	profileReady  bool
	profileMadeAt time.Time
	cache         cache
	// status shares one region's DescribeInstances among the Status
	// calls of a poll interval.
	status *vm.Shared[map[string]*provision.Cluster]
}

var _ provision.Provider = (*Provider)(nil)

// New loads the AWS configuration (credentials are only resolved by the first
// call) and sortie's SSH key, creating the key on first use.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if cfg.Home == "" {
		return nil, fmt.Errorf("aws provider: Config.Home is empty; set it to SORTIE_HOME")
	}
	cfg = withDefaults(cfg)
	awsCfg, err := loadAWSConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	access, err := vm.Open(cfg.Home, vm.Config{User: cfg.SSHUser, ProxyCommand: cfg.ProxyCommand, NodeDirRoot: cfg.NodeDirRoot})
	if err != nil {
		return nil, fmt.Errorf("aws provider: %w", err)
	}
	return &Provider{
		cfg:     cfg,
		aws:     awsCfg,
		ssh:     access,
		log:     cfg.Logger,
		clients: map[string]ec2API{},
		cache:   newCache(),
		status:  &vm.Shared[map[string]*provision.Cluster]{MaxAge: cfg.StatusMaxAge, Now: cfg.Now},
	}, nil
}

func withDefaults(cfg Config) Config {
	if len(cfg.Regions) == 0 {
		cfg.Regions = DefaultRegions()
	}
	cfg.Regions = slices.Clone(cfg.Regions)
	if cfg.SSHUser == "" {
		cfg.SSHUser = "ubuntu"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryMaxAttempts <= 0 {
		cfg.RetryMaxAttempts = 3
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if cfg.LaunchTimeout <= 0 {
		cfg.LaunchTimeout = 10 * time.Minute
	}
	return cfg
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func loadAWSConfig(ctx context.Context, cfg Config) (awssdk.Config, error) {
	attempts := cfg.RetryMaxAttempts
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Regions[0]),
		config.WithRetryer(func() awssdk.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.MaxBackoff = 5 * time.Second
				// A retry budget shared by every call would turn a burst of
				// capacity errors into "quota exceeded" for unrelated calls.
				o.RateLimiter = ratelimit.None
				o.Retryables = append([]retry.IsErrorRetryable{noRetry()}, o.Retryables...)
			})
		}),
	}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	if cfg.Logger != nil {
		opts = append(opts, config.WithLogger(sdkLogger(cfg.Logger)))
	} else {
		opts = append(opts, config.WithLogger(logging.Nop{}))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return awssdk.Config{}, provision.Prechecks(fmt.Errorf("load AWS configuration (profile %q): %w", cfg.Profile, err))
	}
	return awsCfg, nil
}

// Name implements provision.Provider.
func (p *Provider) Name() string { return CloudName }

// logger is the logger of a call about one cluster made under ctx: the
// step's it is made for, when ctx carries one (provision.Logger), else
// the provider's own.
func (p *Provider) logger(ctx context.Context) *slog.Logger {
	return provision.Logger(ctx, p.log, CloudName)
}

// client returns the EC2 client of a region.
func (p *Provider) client(region string) ec2API {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[region]; ok {
		return c
	}
	endpoint := p.cfg.Endpoint
	c := ec2.NewFromConfig(p.aws, func(o *ec2.Options) {
		o.Region = region
		if endpoint != "" {
			o.BaseEndpoint = awssdk.String(endpoint)
		}
		if p.cfg.Calls != nil {
			o.APIOptions = append(o.APIOptions, countCalls(p.cfg.Calls))
		}
	})
	p.clients[region] = c
	return c
}

// knownRegion reports whether region is one sortie is configured to use.
func (p *Provider) knownRegion(region string) bool {
	return slices.Contains(p.cfg.Regions, region)
}

// Close closes the SSH connections to the nodes (the controller stops).
func (p *Provider) Close() error { return p.ssh.Close() }

// Runner implements provision.Provider: SSH to the node's public address
// (else private), through the proxy command when one is set.
func (p *Provider) Runner(ctx context.Context, c *provision.Cluster, rank int) (provision.Runner, error) {
	return p.ssh.Runner(ctx, c, rank, func(ctx context.Context, n provision.Node) (string, error) {
		return p.sshAddress(ctx, c.Placement.Region, n.InstanceID)
	})
}

// sshAddress is the address SSH reaches an instance at, remembered from
// the last describe, else looked up.
func (p *Provider) sshAddress(ctx context.Context, region, instanceID string) (string, error) {
	if addr, ok := p.cache.address(instanceID); ok {
		return addr, nil
	}
	out, err := p.client(region).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{instanceID}})
	if err != nil {
		return "", classify(fmt.Errorf("describe %s in %s: %w", instanceID, region, err))
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			p.cache.remember(in)
		}
	}
	if addr, ok := p.cache.address(instanceID); ok {
		return addr, nil
	}
	return "", fmt.Errorf("instance %s in %s has no IP address", instanceID, region)
}

// sdkLogger hands the AWS SDK's messages (a retried call's warning, a
// response without a checksum), which it would print as plain text on
// stderr, to log as JSON lines of the controller's log.
func sdkLogger(log *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		level := slog.LevelDebug
		if c == logging.Warn {
			level = slog.LevelWarn
		}
		log.Log(context.Background(), level, fmt.Sprintf(format, v...), "source", "aws-sdk")
	})
}
