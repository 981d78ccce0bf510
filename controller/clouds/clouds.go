// Package clouds is the registry of clouds: for each, what a task file may
// say of it (schema knows the clouds from here alone, through Schema),
// where its nodes hear notices, what their sync program gets, how its
// provider is opened from config.yaml and how `sortie check` asks whether
// it is usable. Nothing outside the registry and provision/<cloud>
// branches on a cloud's name.
//
// Every cloud's facts are here (Known), so the CLI knows every cloud; the
// providers of the clouds without an SDK (local, sim) are opened here too,
// those that link a cloud SDK in controller/clouds/all, which only the
// controller process imports, so the CLI does not pay for them.
//
// Adding a cloud: its provider in a folder under provision/, its section in
// controller/config, its facts in a file here listed in Known, and its
// Open and Check in controller/clouds/all.
//
// It must not import controller/clouds/all or a cloud SDK: the registry
// without the SDKs is what the CLI links.
package clouds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"sortie/controller/config"
	"sortie/provision"
	"sortie/provision/local"
	"sortie/provision/node/notice"
	"sortie/provision/price"
	"sortie/schema"
)

// Cloud is one entry of the registry.
type Cloud struct {
	Name string
	// Task is what a task file may say of the cloud: other names, how
	// its regions and zones are named, its bucket store. Schema hands it
	// to schema, Name filled in.
	Task schema.Cloud
	// Remote says that the cloud's nodes are machines (VMs, pods) sortie
	// launches from an image and of a size: a container engine may be
	// installed there, and a size is picked when the task asks none.
	// False for this machine (local) and hollow nodes (sim).
	Remote bool
	// Notice says where the agents on the cloud's nodes hear preemption
	// notices (a notice.Source...), and at which address ("" for the
	// cloud's own); nil when they hear none.
	Notice func(cfg config.Config) (source, endpoint string)
	// StorageEnv is the environment a node's sync program gets in region,
	// from the controller's getenv; nil gives none (a VM's service
	// account).
	StorageEnv func(cfg config.Config, getenv func(string) string, region string) map[string]string
	// Regions are the regions config.yaml offers the cloud, for a
	// placement that names none; nil when it lists none.
	Regions func(cfg config.Config) []string
	// BucketNear says whether a bucket of the cloud's store (Task.Store)
	// at location, as sortie-sync region prints it, is near the cloud's
	// region; BucketBills names who bills a transfer between regions.
	// Nil for a cloud without a store.
	BucketNear  func(location, region string) bool
	BucketBills string
	// ImageTag says how the cloud resolves a SkyPilot image tag (image is
	// "skypilot:TAG") at launch, for a plan to show, and whether it
	// resolves that tag; nil for a cloud that resolves none.
	ImageTag func(image string) (string, bool)
	// Open builds the cloud's provider from the configuration; the
	// provider logs to log (the controller's, with the cloud's name), or,
	// about one attempt's cluster, to the step's (provision.Logger).
	Open func(ctx context.Context, cfg config.Config, log *slog.Logger) (provision.Provider, error)
	// Enabled says where the cloud's credentials come from on m, or why
	// it has none, from the configuration, the environment and local
	// files alone (no network call), so that every launch asks it: a
	// launch refuses a cloud that is not enabled. Check finds the same
	// before it asks the cloud anything. Nil means always enabled (local,
	// sim).
	Enabled func(cfg config.Config, m Machine) (source string, err error)
	// Check says whether the cloud is usable; nil leaves it out of
	// `sortie check` (sim, a test cloud).
	Check func(ctx context.Context, cfg config.Config) Check
	// Placements answers as its provider's Placements would, from the
	// configuration alone: no state, no credentials, nothing to close.
	// Nil for a cloud whose provider must be asked.
	Placements func(ctx context.Context, cfg config.Config, r schema.Resources) ([]schema.Placement, error)
	// Prices builds what reads the cloud's prices: its API's on-demand
	// and spot prices, or config.yaml's per resource (PricedInConfig).
	// Nil for a cloud sortie reads no prices of.
	Prices         func(ctx context.Context, cfg config.Config) (price.Fetcher, error)
	PricedInConfig bool
	// BillingMinimum is the shortest time the cloud bills an instance
	// for (a minute on EC2 and Compute Engine, then per second); zero
	// bills by the second from the first.
	BillingMinimum time.Duration
}

// Check says whether one cloud is usable, and why not: an item of
// `sortie check -o json`.
type Check struct {
	Cloud    string   `json:"cloud"`
	OK       bool     `json:"ok"`
	Details  []string `json:"details"`
	Problems []string `json:"problems"`
}

// NewCheck builds a cloud's check from what its provider found missing,
// an error from asking at all, and labelled details ("credentials",
// "env"); a detail with an empty value is left out.
func NewCheck(problems []string, err error, details ...[2]string) Check {
	c := Check{Problems: problems}
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
	}
	for _, d := range details {
		if d[1] != "" {
			c.Details = append(c.Details, d[0]+": "+d[1])
		}
	}
	return c
}

// Light lists the clouds that link no cloud SDK, whose providers this
// package opens: local and sim.
func Light() []Cloud { return []Cloud{Local(), Sim()} }

// Known lists every cloud's facts, in the order messages list them; only
// the Light ones can be opened from it (Open is nil for the others,
// whose providers controller/clouds/all opens).
func Known() []Cloud { return append(Light(), AWS(), GCP(), Kubernetes()) }

// known is Known by name.
var known = sync.OnceValue(func() map[string]Cloud {
	m := map[string]Cloud{}
	for _, c := range Known() {
		m[c.Name] = c
	}
	return m
})

// Lookup is the facts of the cloud named name ("" means local); the zero
// Cloud, which has none, for a name the registry does not hold.
func Lookup(name string) Cloud {
	if name == "" {
		name = "local"
	}
	return known()[name]
}

// Schema is what task files may say of every cloud the registry holds
// (Known, in its order), for schema to read them with: task files may name
// every one of them.
func Schema() schema.Clouds {
	var cs schema.Clouds
	for _, c := range Known() {
		t := c.Task
		t.Name = c.Name
		cs = append(cs, t)
	}
	if err := cs.Check(); err != nil {
		panic(err) // the facts above are wrong
	}
	return cs
}

// Local is this machine: each node a directory and a process group.
func Local() Cloud {
	return Cloud{
		Name:           "local",
		Prices:         configPrices("local", func(cfg config.Config) config.ResourcePrices { return cfg.Local.Prices }),
		PricedInConfig: true,
		Notice:         func(config.Config) (string, string) { return notice.SourceLocal, "" },
		StorageEnv:     localStorageEnv,
		Open: func(_ context.Context, cfg config.Config, _ *slog.Logger) (provision.Provider, error) {
			return LocalProvider(cfg), nil
		},
		Placements: func(ctx context.Context, cfg config.Config, r schema.Resources) ([]schema.Placement, error) {
			return LocalProvider(cfg).Placements(ctx, r)
		},
		Check: func(_ context.Context, cfg config.Config) Check {
			var regions []string
			for _, r := range LocalRegions(cfg) {
				regions = append(regions, fmt.Sprintf("%s (%s)", r.Name, strings.Join(r.Zones, ", ")))
			}
			c := Check{Details: []string{"regions: " + strings.Join(regions, "; ")}}
			mode, err := LocalProvider(cfg).SandboxMode()
			switch {
			case err != nil:
				c.Problems = append(c.Problems, err.Error())
			case mode == local.SandboxOff && cfg.Local.Sandbox == local.SandboxOff:
				c.Details = append(c.Details, "sandbox: off (local.sandbox: off): local tasks run as this user with the sortie home, its secrets and its store in reach; keep it off only in a single user's own home, never on a server")
			case mode == local.SandboxOff:
				c.Details = append(c.Details, "sandbox: none ("+local.ProbeSandbox().Why+"): local tasks run as this user with the sortie home in reach; install bubblewrap (apt-get install bubblewrap); a server refuses local tasks without it")
			default:
				st := local.ProbeSandbox()
				c.Details = append(c.Details, "sandbox: "+st.Version+" ("+st.Program+"): local tasks see the host read-only and never the sortie home")
			}
			return c
		},
	}
}

// localStorageEnv is what of the controller's environment a local node's
// sync program gets: the stores' credential and endpoint settings, and
// HOME, where the shared credential files are.
func localStorageEnv(config.Config, func(string) string, string) map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") || k == "STORAGE_EMULATOR_HOST" || k == "GOOGLE_APPLICATION_CREDENTIALS" ||
			strings.HasPrefix(k, "CLOUDSDK_") || k == "HOME" {
			env[k] = v
		}
	}
	return env
}

// LocalProvider is the local provider over the configured regions.
func LocalProvider(cfg config.Config) *local.Provider {
	return local.New(local.Config{Home: cfg.Home, Regions: LocalRegions(cfg), Sandbox: cfg.Local.Sandbox, Server: cfg.Local.Server})
}

// LocalRegions are the local provider's regions: local.regions from the
// config, else the default region with two zones.
func LocalRegions(cfg config.Config) []local.Region {
	if len(cfg.Local.Regions) == 0 {
		return local.DefaultRegions()
	}
	var regions []local.Region
	for _, r := range cfg.Local.Regions {
		regions = append(regions, local.Region{Name: r.Name, Zones: r.Zones})
	}
	return regions
}

// Set opens each cloud's provider on first use and keeps it.
type Set struct {
	cfg    config.Config
	clouds map[string]Cloud
	// APICalls, when set before the first Provider, is told of every call
	// the providers opened afterwards make to their cloud's API.
	APICalls func(cloud, call string, err error)
	// Log, when set before the first Provider, is the logger of the
	// providers opened afterwards, each with its cloud's name ("cloud");
	// nil logs nothing.
	Log *slog.Logger

	mu   sync.Mutex
	open map[string]provision.Provider
}

// NewSet returns the providers of the given clouds under cfg.
func NewSet(cfg config.Config, clouds []Cloud) *Set {
	s := &Set{cfg: cfg, clouds: map[string]Cloud{}, open: map[string]provision.Provider{}}
	for _, c := range clouds {
		s.clouds[c.Name] = c
	}
	return s
}

// Has says whether cloud is in the set ("" means local).
func (s *Set) Has(cloud string) bool {
	if cloud == "" {
		cloud = "local"
	}
	_, ok := s.clouds[cloud]
	return ok
}

// Provider returns the provider of cloud ("" means local).
func (s *Set) Provider(ctx context.Context, cloud string) (provision.Provider, error) {
	if cloud == "" {
		cloud = "local"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.open[cloud]; ok {
		return p, nil
	}
	c, ok := s.clouds[cloud]
	if !ok {
		return nil, fmt.Errorf("cloud %q is not supported by this controller (supported: %s)", cloud, strings.Join(s.names(), ", "))
	}
	if count := s.APICalls; count != nil {
		ctx = provision.WithAPICalls(ctx, func(call string, err error) { count(cloud, call, err) })
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p, err := c.Open(ctx, s.cfg, log.With("cloud", cloud))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cloud, err)
	}
	s.open[cloud] = p
	return p, nil
}

// ConfigPlacements answers where r's cloud ("" means local) offers r
// when its configuration alone says so; ok is false for a cloud this set
// (nil holds none) does not hold or whose provider must be asked.
func (s *Set) ConfigPlacements(ctx context.Context, r schema.Resources) (ps []schema.Placement, ok bool, err error) {
	if s == nil {
		return nil, false, nil
	}
	cloud := r.Cloud
	if cloud == "" {
		cloud = "local"
	}
	c, found := s.clouds[cloud]
	if !found || c.Placements == nil {
		return nil, false, nil
	}
	ps, err = c.Placements(ctx, s.cfg, r)
	return ps, true, err
}

func (s *Set) names() []string {
	n := make([]string, 0, len(s.clouds))
	for k := range s.clouds {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Opened lists local and every cloud opened so far, for the orphan sweep.
func (s *Set) Opened() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{"local"}
	for k := range s.open {
		if k != "local" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Close closes every provider opened so far that holds something (the
// sim's state file, whose final save runs then; a cloud client's
// connections), and forgets them. A controller that stops calls it after
// its last step.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for name, p := range s.open {
		if c, ok := p.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", name, err))
			}
		}
		delete(s.open, name)
	}
	return errors.Join(errs...)
}

// Check reports every cloud of the set that has a check: local first, then
// the others by name, each asked with its standard credential chain.
func (s *Set) Check(ctx context.Context) []Check {
	var out []Check
	for _, name := range s.names() {
		c := s.clouds[name]
		if c.Check == nil {
			continue
		}
		r := c.Check(ctx, s.cfg)
		r.Cloud, r.OK = name, len(r.Problems) == 0
		if r.Details == nil {
			r.Details = []string{}
		}
		if r.Problems == nil {
			r.Problems = []string{}
		}
		if name == "local" {
			out = append([]Check{r}, out...)
		} else {
			out = append(out, r)
		}
	}
	return out
}
