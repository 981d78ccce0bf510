// Package config reads $SORTIE_HOME/config.yaml: every key optional, most
// overridable by an environment variable for tests. Each cloud has its own
// section here; the cloud registry (controller/clouds) maps a section onto
// its provider's configuration.
//
// It must not import sortie/controller, controller/store, controller/service,
// controller/clouds/... or sortie/provision/...: config.yaml is read by every
// program, before anything else is opened.
package config

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sortiehome "sortie/controller/home"
	"sortie/schema"

	"sortie/strategy"
)

// Config is $SORTIE_HOME/config.yaml; every key is optional and most can be
// overridden by an environment variable (tests use those).
type Config struct {
	Home       string           `json:"-"`
	Controller ControllerConfig `json:"controller"`
	Local      LocalConfig      `json:"local"`
	AWS        AWSConfig        `json:"aws"`
	GCP        GCPConfig        `json:"gcp"`
	Kubernetes KubernetesConfig `json:"kubernetes"`
	SSH        SSHConfig        `json:"ssh"`
	Sim        SimConfig        `json:"sim"`
	Notify     NotifyConfig     `json:"notify"`
	Storage    StorageConfig    `json:"storage"`
	Quarantine QuarantineConfig `json:"quarantine"`
	// Preemptions orders spot candidates by the zones' recent preemptions.
	Preemptions PreemptionsConfig `json:"preemptions"`
	// Budgets are the users' monthly budgets by default.
	Budgets BudgetsConfig `json:"budgets"`
	Prices  PricesConfig  `json:"prices"`
	// Limits are what running jobs may hold; FairShare orders the jobs
	// waiting for them.
	Limits    LimitsConfig    `json:"limits"`
	FairShare FairShareConfig `json:"fair_share"`
}

// StorageConfig is the storage: section: how tasks' buckets are synced.
type StorageConfig struct {
	// SyncInterval is how often a node uploads what changed in its
	// MOUNT_CACHED buckets (SORTIE_STORAGE_SYNC_INTERVAL); 30s by default.
	SyncInterval Duration `json:"sync_interval"`
}

// ControllerConfig is the controller: section.
type ControllerConfig struct {
	// PollInterval is how often every job is reconciled (SORTIE_POLL_INTERVAL).
	PollInterval Duration `json:"poll_interval"`
	// MaxParallelLaunches bounds concurrent cluster launches.
	MaxParallelLaunches int `json:"max_parallel_launches"`
	// RestartBackoff is the wait before each restart or recovery
	// (SORTIE_RESTART_BACKOFF_INITIAL / _MAX).
	RestartBackoffInitial Duration `json:"restart_backoff_initial"`
	RestartBackoffMax     Duration `json:"restart_backoff_max"`
	// LaunchBackoff is the wait between rounds of launch tries when no
	// placement has capacity (SORTIE_LAUNCH_BACKOFF_INITIAL / _MAX).
	LaunchBackoffInitial Duration `json:"launch_backoff_initial"`
	LaunchBackoffMax     Duration `json:"launch_backoff_max"`
	// LaunchRounds is how many rounds over every placement are tried before
	// FAILED_NO_RESOURCE (SORTIE_LAUNCH_ROUNDS).
	LaunchRounds int `json:"launch_rounds"`
	// UnreachableChecks is how many checks in a row may fail to reach a node
	// that its provider says is running before the attempt counts as
	// node_lost (SORTIE_UNREACHABLE_CHECKS).
	UnreachableChecks int `json:"unreachable_checks"`
	// SweepInterval is how often clusters that belong to no live attempt
	// are looked for and terminated (besides at every start).
	SweepInterval Duration `json:"sweep_interval"`
	// MetricsListen, when set, is the host:port the controller serves
	// Prometheus metrics on, at /metrics; empty (the default) serves none.
	MetricsListen string `json:"metrics_listen"`
	// Store is where the jobs are kept (SORTIE_STORE): a PostgreSQL URL
	// for a team, or a SQLite file; empty is $SORTIE_HOME/state.db.
	Store string `json:"store"`
	// LogRetention is how long the kept logs of a job that has ended stay
	// on the controller; the sweep removes older ones (default 30 days).
	LogRetention Duration `json:"log_retention"`
	// LogMaxBytesPerAttempt bounds what is kept of an attempt's logs, its
	// nodes' together: past it, the first and the last half are kept
	// (default 1 GiB).
	LogMaxBytesPerAttempt ByteSize `json:"log_max_bytes_per_attempt"`
	// MaxKeepOnFailure is the longest job_recovery.keep_on_failure a launch
	// may ask for (SORTIE_MAX_KEEP_ON_FAILURE): a kept cluster costs what
	// it costs running, so a typo of "30d" for "30m" is refused.
	MaxKeepOnFailure Duration `json:"max_keep_on_failure"`
}

// LocalConfig is the local: section.
type LocalConfig struct {
	Regions []LocalRegion `json:"regions"`
	// Prices are what a local node costs (zero by default).
	Prices ResourcePrices `json:"prices"`
	// Sandbox is whether local tasks run in a sandbox (bubblewrap): "on"
	// (only sandboxed; a task that cannot be is refused), "off" (on this
	// machine as whoever runs sortie: a single user's own home only), or
	// "auto" ("": sandboxed when bubblewrap is there and works, always on
	// a shared server).
	Sandbox string `json:"sandbox"`
	// Server is set by `sortie server`, never by the file: many users'
	// local tasks run here, so they run only sandboxed unless Sandbox is
	// "off".
	Server bool `json:"-"`
}

// LocalRegion is one region of the local provider.
type LocalRegion struct {
	Name  string   `json:"name"`
	Zones []string `json:"zones"`
}

// AWSConfig is the aws: section.
type AWSConfig struct {
	Profile  string   `json:"profile"`
	Regions  []string `json:"regions"`
	Endpoint string   `json:"endpoint"` // an EC2-compatible endpoint, for tests
	// PricingEndpoint is the Price List Query API's endpoint (a stand-in,
	// for tests); "" is AWS's, in us-east-1.
	PricingEndpoint string `json:"pricing_endpoint"`
	SSHUser         string `json:"ssh_user"`
	// NodeDir is the directory on instances under which each node's files live.
	NodeDir string `json:"node_dir"`
	// LaunchTimeout bounds how long a launch waits for instances to answer SSH.
	LaunchTimeout Duration `json:"launch_timeout"`
	// PollInterval is how often a launch checks booting instances.
	PollInterval Duration `json:"poll_interval"`
	// RetryMaxAttempts bounds the SDK's attempts per call (default 3).
	RetryMaxAttempts int `json:"retry_max_attempts"`
	// IMDSEndpoint is the instance metadata service the agent on each node
	// asks for spot interruption notices, and the nodes' bucket sync for
	// the instance profile's credentials; "" is EC2's own
	// (http://169.254.169.254). Tests point it at a simulator.
	IMDSEndpoint string `json:"imds_endpoint"`
	// InstanceProfile is the IAM instance profile, a name or an ARN, of
	// the instances of tasks with buckets; "" is sortie's own, sortie-node,
	// which sortie creates the first time it is needed.
	InstanceProfile string `json:"instance_profile"`
}

// GCPConfig is the gcp: section.
type GCPConfig struct {
	Project  string   `json:"project"`
	Regions  []string `json:"regions"`
	Endpoint string   `json:"endpoint"` // a Compute Engine API stand-in, for tests
	// BillingEndpoint is the Cloud Billing Catalog API's endpoint (a
	// stand-in, for tests); "" is Google's.
	BillingEndpoint string `json:"billing_endpoint"`
	SSHUser         string `json:"ssh_user"`
	// NodeDir is the directory on VMs under which each node's files live.
	NodeDir string `json:"node_dir"`
	// TerminationAction is what a spot VM does when preempted: DELETE or STOP.
	TerminationAction string `json:"termination_action"`
	// ServiceAccount is the service account (an email, or "default") the
	// VMs of a task with buckets run as.
	ServiceAccount string   `json:"service_account"`
	PollInterval   Duration `json:"poll_interval"`
	LaunchTimeout  Duration `json:"launch_timeout"`
	// MetadataEndpoint is the metadata server the agent on each node asks
	// whether its VM is preempted; "" is GCE's own
	// (http://metadata.google.internal). Tests point it at a stand-in.
	MetadataEndpoint string `json:"metadata_endpoint"`
}

// SSHConfig is the ssh: section.
type SSHConfig struct {
	// ProxyCommand reaches nodes through a bastion, OpenSSH style (%h, %p).
	ProxyCommand string `json:"proxy_command"`
}

// Duration reads "5s" style durations from YAML.
type Duration time.Duration

// UnmarshalJSON accepts a Go duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := string(b)
	if u, err := strconv.Unquote(s); err == nil {
		s = u
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= maxDuration {
			return fmt.Errorf("%q is not a duration (e.g. 5s, 1m30s)", s)
		}
		*d = Duration(time.Duration(f * float64(time.Second)))
		return nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		// Whole days, as log_retention is most often given.
		if n, err := strconv.Atoi(days); err == nil && n >= 0 && n <= 100000 {
			*d = Duration(time.Duration(n) * 24 * time.Hour)
			return nil
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. 5s, 1m30s, 30d)", s)
	}
	*d = Duration(v)
	return nil
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Load reads home/config.yaml (absent is fine), applies environment
// overrides from getenv, checks every value against its range, then fills
// defaults. A configuration that cannot be used is an *Error naming each
// key, its line, the value and what to write instead.
func Load(home string, getenv func(string) string) (Config, error) {
	cfg := Config{Home: home}
	path := sortiehome.Config(home)
	e := &Error{Path: path}
	lines := map[string]int{}
	b, err := readConfig(path)
	switch {
	case err == nil:
		lines, e.Problems = decodeYAML(b, &cfg)
	case !os.IsNotExist(err):
		return cfg, err
	}
	cfg.Home = home
	fromEnv := map[string]string{}
	c := &cfg.Controller
	durations := []struct {
		env, key string
		dst      *Duration
	}{
		{"SORTIE_POLL_INTERVAL", "controller.poll_interval", &c.PollInterval},
		{"SORTIE_RESTART_BACKOFF_INITIAL", "controller.restart_backoff_initial", &c.RestartBackoffInitial},
		{"SORTIE_RESTART_BACKOFF_MAX", "controller.restart_backoff_max", &c.RestartBackoffMax},
		{"SORTIE_LAUNCH_BACKOFF_INITIAL", "controller.launch_backoff_initial", &c.LaunchBackoffInitial},
		{"SORTIE_LAUNCH_BACKOFF_MAX", "controller.launch_backoff_max", &c.LaunchBackoffMax},
		{"SORTIE_SWEEP_INTERVAL", "controller.sweep_interval", &c.SweepInterval},
		{"SORTIE_MAX_KEEP_ON_FAILURE", "controller.max_keep_on_failure", &c.MaxKeepOnFailure},
		{"SORTIE_STORAGE_SYNC_INTERVAL", "storage.sync_interval", &cfg.Storage.SyncInterval},
		{"SORTIE_QUARANTINE_HALF_LIFE", "quarantine.half_life", &cfg.Quarantine.HalfLife},
		{"SORTIE_PREEMPTIONS_HALF_LIFE", "preemptions.half_life", &cfg.Preemptions.HalfLife},
	}
	for _, d := range durations {
		if v := getenv(d.env); v != "" {
			fromEnv[d.key] = d.env
			if err := d.dst.UnmarshalJSON([]byte(strconv.Quote(v))); err != nil {
				e.Problems = append(e.Problems, schema.Problem{Path: d.env, Message: err.Error()})
			}
		}
	}
	ints := []struct {
		env, key string
		dst      *int
	}{
		{"SORTIE_LAUNCH_ROUNDS", "controller.launch_rounds", &c.LaunchRounds},
		{"SORTIE_UNREACHABLE_CHECKS", "controller.unreachable_checks", &c.UnreachableChecks},
		{"SORTIE_MAX_PARALLEL_LAUNCHES", "controller.max_parallel_launches", &c.MaxParallelLaunches},
		{"SORTIE_QUARANTINE_THRESHOLD", "quarantine.threshold", &cfg.Quarantine.Threshold},
	}
	if v := getenv("SORTIE_STORE"); v != "" {
		fromEnv["controller.store"] = "SORTIE_STORE"
		c.Store = v
	}
	if v := getenv("SORTIE_LOCAL_SANDBOX"); v != "" {
		fromEnv["local.sandbox"] = "SORTIE_LOCAL_SANDBOX"
		cfg.Local.Sandbox = v
	}
	for _, n := range ints {
		if v := getenv(n.env); v != "" {
			fromEnv[n.key] = n.env
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				e.Problems = append(e.Problems, schema.Problem{Path: n.env, Message: fmt.Sprintf("%q is not a whole number >= 0", v)})
				continue
			}
			*n.dst = i
		}
	}
	if len(e.Problems) == 0 {
		e.Problems = append(append(cfg.outOfRange(lines, fromEnv), cfg.notifyProblems(lines)...), cfg.badEndpoints(lines)...)
		e.Problems = append(e.Problems, cfg.kubernetesProblems(lines)...)
		e.Problems = append(e.Problems, cfg.simLoseProblems(lines)...)
		e.Problems = append(e.Problems, cfg.budgetProblems(lines)...)
		e.Problems = append(e.Problems, cfg.limitsProblems(lines)...)
		e.Problems = append(e.Problems, cfg.pricesProblems(lines)...)
		// YAML reads an unquoted on or off as a boolean.
		switch cfg.Local.Sandbox {
		case "true":
			cfg.Local.Sandbox = "on"
		case "false":
			cfg.Local.Sandbox = "off"
		}
		switch cfg.Local.Sandbox {
		case "", "auto", "on", "off":
		default:
			key, line := "local.sandbox", lines["local.sandbox"]
			if from, ok := fromEnv[key]; ok {
				key, line = from, 0
			}
			e.Problems = append(e.Problems, schema.Problem{Path: key, Line: line,
				Message: fmt.Sprintf("%q is not a sandbox mode; use on, off or auto", cfg.Local.Sandbox)})
		}
		if msg := checkListen(c.MetricsListen); msg != "" {
			e.Problems = append(e.Problems, schema.Problem{Path: "controller.metrics_listen", Line: lines["controller.metrics_listen"], Message: msg})
		}
		if msg := checkStore(c.Store); msg != "" {
			key, line := "controller.store", lines["controller.store"]
			if from, ok := fromEnv[key]; ok {
				key, line = from, 0
			}
			e.Problems = append(e.Problems, schema.Problem{Path: key, Line: line, Message: msg})
		}
	}
	if len(e.Problems) > 0 {
		inFileOrder(e.Problems)
		return cfg, e
	}
	cfg.fillDefaults()
	return cfg, nil
}

// checkStore says what is wrong with a store URL, "" when nothing is: a
// PostgreSQL URL, or a SQLite file by its absolute path (the CLI and the
// controller it starts run in different directories). It never quotes a
// PostgreSQL URL, which may hold a password.
func checkStore(u string) string {
	const fix = "give postgres://USER:PASSWORD@HOST:PORT/DATABASE, sqlite:/ABSOLUTE/PATH, or leave it out for $SORTIE_HOME/state.db"
	lower := strings.ToLower(u)
	switch {
	case u == "":
		return ""
	case strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://"):
		if _, err := url.Parse(u); err != nil {
			return "the PostgreSQL URL does not parse; " + fix
		}
		return ""
	case strings.Contains(lower, "://"):
		return fmt.Sprintf("%q is not a store sortie knows; %s", u, fix)
	}
	if !filepath.IsAbs(strings.TrimPrefix(u, "sqlite:")) {
		return fmt.Sprintf("%q is not an absolute path; %s", u, fix)
	}
	return ""
}

// StoreURL is where the jobs are kept: controller.store, or the home's
// state.db.
func (cfg Config) StoreURL() string {
	if cfg.Controller.Store != "" {
		return cfg.Controller.Store
	}
	return sortiehome.State(cfg.Home)
}

// checkListen says what is wrong with a listen address, "" when nothing
// is: it must be host:port with a port number, the host an IP address or
// a name (empty listens on every address).
func checkListen(addr string) string {
	if addr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q is not host:port; give an address such as 127.0.0.1:9090, or leave it out to serve no metrics", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("%q: the port %q is not a number from 0 to 65535; give an address such as 127.0.0.1:9090", addr, port)
	}
	if strings.ContainsAny(host, " /\\") {
		return fmt.Sprintf("%q: %q is not a host name or IP address; give an address such as 127.0.0.1:9090", addr, host)
	}
	return ""
}

// maxConfigSize bounds what is read of config.yaml.
const maxConfigSize = 1 << 20

// readConfig reads config.yaml when it is a regular file of at most
// maxConfigSize bytes: a FIFO or a device there never holds the process.
func readConfig(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{Path: path, Problems: []schema.Problem{{Message: fmt.Sprintf("is %s, not a regular file", schema.FileKind(fi.Mode()))}}}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigSize {
		return nil, &Error{Path: path, Problems: []schema.Problem{{Message: fmt.Sprintf("is larger than %d bytes; a configuration is a few lines", maxConfigSize)}}}
	}
	return b, nil
}

func (cfg *Config) fillDefaults() {
	if cfg.Storage.SyncInterval <= 0 {
		cfg.Storage.SyncInterval = Duration(30 * time.Second)
	}
	c := &cfg.Controller
	if c.PollInterval <= 0 {
		c.PollInterval = Duration(5 * time.Second)
	}
	if c.MaxParallelLaunches <= 0 {
		c.MaxParallelLaunches = 16
	}
	rb, lb := strategy.DefaultRestartBackoff(), strategy.DefaultLaunchBackoff()
	if c.RestartBackoffInitial <= 0 {
		c.RestartBackoffInitial = Duration(rb.Initial)
	}
	if c.RestartBackoffMax <= 0 {
		c.RestartBackoffMax = Duration(rb.Max)
	}
	if c.LaunchBackoffInitial <= 0 {
		c.LaunchBackoffInitial = Duration(lb.Initial)
	}
	if c.LaunchBackoffMax <= 0 {
		c.LaunchBackoffMax = Duration(lb.Max)
	}
	if c.LaunchRounds <= 0 {
		c.LaunchRounds = 5
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = Duration(10 * time.Minute)
	}
	if c.MaxKeepOnFailure <= 0 {
		c.MaxKeepOnFailure = Duration(DefaultMaxKeepOnFailure)
	}
	if c.UnreachableChecks <= 0 {
		c.UnreachableChecks = 12
	}
	if c.LogRetention <= 0 {
		c.LogRetention = Duration(DefaultLogRetention)
	}
	if c.LogMaxBytesPerAttempt <= 0 {
		c.LogMaxBytesPerAttempt = DefaultLogMaxBytes
	}
	if cfg.Quarantine.Threshold <= 0 {
		cfg.Quarantine.Threshold = strategy.DefaultQuarantineThreshold
	}
	if cfg.Quarantine.HalfLife <= 0 {
		cfg.Quarantine.HalfLife = Duration(strategy.DefaultQuarantineHalfLife)
	}
	if cfg.Preemptions.HalfLife <= 0 {
		cfg.Preemptions.HalfLife = Duration(defaultPreemptionHalfLife)
	}
	cfg.Prices.fillDefaults()
	for i, w := range cfg.Notify.Webhooks {
		cfg.Notify.Webhooks[i] = w.WithDefaults()
	}
}

// The defaults of the log keys.
const (
	DefaultLogRetention = 30 * 24 * time.Hour
	DefaultLogMaxBytes  = ByteSize(1 << 30)
)

// DefaultMaxKeepOnFailure is controller.max_keep_on_failure when it is
// left out: a working day and a night, time to look at a failure the next
// morning.
const DefaultMaxKeepOnFailure = 24 * time.Hour

// RestartBackoff is the back-off before restarts and recoveries.
func (cfg Config) RestartBackoff() strategy.Backoff {
	b := strategy.DefaultRestartBackoff()
	b.Initial, b.Max = cfg.Controller.RestartBackoffInitial.D(), cfg.Controller.RestartBackoffMax.D()
	return b
}

// LaunchBackoff is the back-off between rounds of launch tries.
func (cfg Config) LaunchBackoff() strategy.Backoff {
	b := strategy.DefaultLaunchBackoff()
	b.Initial, b.Max = cfg.Controller.LaunchBackoffInitial.D(), cfg.Controller.LaunchBackoffMax.D()
	return b
}

// SimConfig is the sim: section, the cloud of hollow nodes used for scale and
// chaos tests of the controller.
type SimConfig struct {
	// Regions and their zones; empty means sim's default two regions.
	Regions []LocalRegion `json:"regions"`
	// BootDelay is how long a launch takes (default 0).
	BootDelay Duration `json:"boot_delay"`
	// RunTime is how long every task runs (default 10s).
	RunTime Duration `json:"run_time"`
	// ExitCodes make a share of tasks exit with a code on an attempt.
	ExitCodes []SimExitRule `json:"exit_codes"`
	// PreemptRate is the share of clusters preempted while their first
	// task runs; PreemptAttempts limits it to the first attempts (0: all).
	PreemptRate     float64 `json:"preempt_rate"`
	PreemptAttempts int     `json:"preempt_attempts"`
	// CapacityPerZone is how many nodes a zone holds (0: unlimited).
	CapacityPerZone int `json:"capacity_per_zone"`
	// LoseNodesIn are zones whose hosts fail: a cluster there loses its
	// first node once its task has started, as a host failure would.
	LoseNodesIn []string `json:"lose_nodes_in"`
	// Seed makes the random choices repeat from run to run.
	Seed uint64 `json:"seed"`
	// Prices are what a hollow node costs (zero by default), for tests
	// and benchmarks of costs.
	Prices ResourcePrices `json:"prices"`
	// SaveEvery bounds how often the sim's state is saved under
	// $SORTIE_HOME/sim (default 5s): encoding many clusters costs the
	// controller's process CPU each time, which a real cloud does not. 0
	// saves every change before the call that made it returns, so that a
	// controller killed at any moment finds the cloud as it left it (crash
	// tests).
	SaveEvery *Duration `json:"save_every"`
	// DecisionLog, when set, is a file (relative to $SORTIE_HOME) where the
	// sim records when the controller saw each attempt end and when it
	// asked for the next one.
	DecisionLog string `json:"decision_log"`
	// Shared keeps the clusters where every replica of the controller
	// sees them ($SORTIE_HOME/sim/shared), as machines share a real
	// cloud; the replica program sets it.
	Shared bool `json:"-"`
}

// SimExitRule is one sim.exit_codes item.
type SimExitRule struct {
	Code    int     `json:"code"`
	Share   float64 `json:"share"`
	Attempt int     `json:"attempt"` // 1-based; 0 means every attempt
}
