package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/daemon"
	"sortie/controller/metrics"
	"sortie/controller/notify"
	"sortie/controller/profiling"
	"sortie/controller/store"
)

// Serve runs the controller of h in this process until ctx ends or the
// process is told to stop, driving the clouds cls. It is the controller
// program's whole work; daemon.Run makes it the only one of its home.
func Serve(ctx context.Context, h string, log *slog.Logger, cls []clouds.Cloud) error {
	return ServeWith(ctx, h, log, cls, ServeOptions{})
}

// ServeOptions are what a process running the controller adds to it.
type ServeOptions struct {
	// Store is the store's URL (a path, sqlite:PATH or postgres://...);
	// "" is the configured one (controller.store, SORTIE_STORE, else the
	// home's state.db).
	Store string
	// Beside runs beside the loop once the controller is ready, with the
	// controller (to Wake it) and its store, until ctx ends: `sortie
	// server`'s API. An error from it stops the controller.
	Beside func(ctx context.Context, c *Controller, st *store.Store) error
	// Server says many users' jobs run here (`sortie server`): local
	// tasks run only sandboxed (config.LocalConfig.Server).
	Server bool
}

// ServeWith is Serve with opts.
func ServeWith(ctx context.Context, h string, log *slog.Logger, cls []clouds.Cloud, opts ServeOptions) error {
	// c is set before ready closes: a SIGUSR1 that comes earlier has
	// nothing to wake, and the first tick reads the store anyway.
	var c *Controller
	ready := make(chan struct{})
	return daemon.Run(ctx, h, func(ctx context.Context) error {
		cfg, st, err := openStore(ctx, h, opts.Store)
		if err != nil {
			return err
		}
		defer st.Close()
		if live, err := st.LiveReplicas(ctx); err != nil || len(live) > 0 {
			if err != nil {
				return fmt.Errorf("read the replicas of the store: %w", err)
			}
			return fmt.Errorf("replicas %s drive the jobs of this store: a controller of its own would drive them beside them; run it as one more replica (sortie-controller run --replica NAME), or stop them first",
				strings.Join(live, ", "))
		}
		cfg.Local.Server = opts.Server
		return run(ctx, h, cfg, st, log, cls, func(got *Controller) error {
			c = got
			close(ready)
			return nil
		}, opts.Beside)
	}, func() {
		select {
		case <-ready:
			c.Wake()
		default:
		}
	})
}

// ServeReplica runs a replica of the controller (ReplicaOptions), with
// what opts adds beside it (`sortie server --replica`'s API), in this
// process until ctx ends or the process gets SIGTERM or SIGINT; several
// replicas share the jobs of one store, each driving the jobs it leases.
// It takes no lock of h: replicas share the store, and the home directory
// for the files a job keeps beside it (secrets, kept logs), which each of
// them must reach. A controller of h's own, run by the CLI, must not run
// beside them: ServeReplica refuses to start while one does.
func ServeReplica(ctx context.Context, h string, o ReplicaOptions, log *slog.Logger, cls []clouds.Cloud, opts ServeOptions) error {
	if p := daemon.Running(h); p != 0 {
		return fmt.Errorf("the controller of %s (pid %d) drives every job of its store; stop it (sortie controller stop) before starting replicas there", h, p)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, st, err := openStore(ctx, h, opts.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	// Replicas in one home share the sim's cloud, as machines share a real
	// one.
	cfg.Sim.Shared = true
	cfg.Local.Server = opts.Server
	return run(ctx, h, cfg, st, log, cls, func(c *Controller) error { return c.AsReplica(o) }, opts.Beside)
}

// run runs a controller over st until ctx ends; ready is given it before it
// starts (to wake it, or make it a replica), and an error of ready's is
// run's.
func run(ctx context.Context, h string, cfg config.Config, st *store.Store, log *slog.Logger, cls []clouds.Cloud, ready func(*Controller) error,
	beside func(ctx context.Context, c *Controller, st *store.Store) error) error {
	stopProfiles, err := profiling.Start(os.Getenv, log)
	defer stopProfiles()
	if err != nil {
		return err
	}
	if cfg.Local.Server {
		// Many users' tasks run here: a local one must not reach the
		// server's home.
		mode, err := clouds.LocalProvider(cfg).SandboxMode()
		switch {
		case err != nil:
			log.Warn("local jobs will be refused: " + err.Error())
		case mode == "off":
			log.Warn("local.sandbox is off in config.yaml: every user's local tasks run as the server's user, with its home, secrets and store in reach; remove it to run them sandboxed (bubblewrap)")
		}
	}
	provs := clouds.NewSet(cfg, cls)
	c := New(st, cfg, provs, log)
	provs.APICalls, provs.Log = c.Metrics.APICall, log
	c.Pause, err = PauseFromEnv(os.Getenv, func(point string, job int64, attempt int) {
		log.Info("pause point", "point", point, "job", job, "attempt", attempt)
	})
	if err != nil {
		return err
	}
	if err := ready(c); err != nil {
		return err
	}
	stopMetrics, err := ServeMetrics(cfg.Controller.MetricsListen, c.Metrics, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	// Notifications are sent beside the loop, never in it: a slow
	// receiver holds up only the notifier's own goroutines. Whether jobs
	// without notify have webhooks (this config's defaults) is recorded
	// before the loop or the API changes any job's status.
	n := NewNotifier(st, cfg, c.Log, c.Now)
	if err := n.Start(ctx); err != nil {
		return err
	}
	nctx, stopNotifier := context.WithCancel(ctx)
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		n.Run(nctx)
	}()
	defer func() { stopNotifier(); <-notified }()
	// Prices are read beside the loop too: a cloud's pricing API that
	// is slow or down holds up nothing but the refresh.
	stopPrices := StartPrices(ctx, c, cfg, cls)
	defer stopPrices()
	args := []any{"home", h, "store", store.Redact(cfg.StoreURL()), "pid", os.Getpid(), "poll_interval", cfg.Controller.PollInterval.D()}
	if c.lease != nil {
		args = append(args, "replica", c.lease.opts.Name, "lease_ttl", c.lease.opts.TTL)
	}
	c.Log.Info("controller started", args...)
	if beside != nil {
		// The loop and what runs beside it (the API) stop together:
		// either's end stops the other.
		runCtx, stopRun := context.WithCancel(ctx)
		var besideErr error
		besideDone := make(chan struct{})
		go func() {
			defer close(besideDone)
			besideErr = beside(runCtx, c, st)
			stopRun()
		}()
		err = c.Run(runCtx)
		stopRun()
		<-besideDone
		if besideErr != nil && !errors.Is(besideErr, context.Canceled) {
			err = errors.Join(err, besideErr)
		}
	} else {
		err = c.Run(ctx)
	}
	// Run has waited for every step: the providers can save what
	// they keep (the sim's clusters) for the next controller.
	if cerr := provs.Close(); cerr != nil {
		c.Log.Warn("close providers", "err", cerr)
	}
	c.Log.Info("controller stopped")
	return err
}

// ServeMetrics serves m at /metrics on addr (controller.metrics_listen)
// until the returned stop is called; an empty addr serves nothing. An
// address that cannot be listened on is an error naming the key.
func ServeMetrics(addr string, m *metrics.Metrics, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("controller.metrics_listen: cannot listen on %q: %w; give a free host:port, or leave it out to serve no metrics", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}

// StartPrices starts c's PriceRefresher with the fetchers of the clouds
// cls, until the returned stop is called (or ctx ends).
func StartPrices(ctx context.Context, c *Controller, cfg config.Config, cls []clouds.Cloud) (stop func()) {
	r := c.PriceRefresher
	if r == nil {
		return func() {}
	}
	r.Fetchers, r.Fixed = clouds.PriceFetchers(cfg, cls), clouds.FixedPriceKeys(cls)
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(pctx)
	}()
	return func() { cancel(); <-done }
}

// NewNotifier sends the notifications of st's jobs to the webhooks of
// their tasks, or cfg's.
func NewNotifier(st *store.Store, cfg config.Config, log *slog.Logger, now func() time.Time) *notify.Notifier {
	return &notify.Notifier{Store: st, Default: cfg.Notify.Webhooks, Secrets: cfg.Notify.Secrets, Clouds: clouds.Schema(), Log: log, Now: now}
}

// OpenHome reads h's configuration and opens its store (controller.store,
// SORTIE_STORE, else the home's state.db).
func OpenHome(ctx context.Context, h string) (config.Config, *store.Store, error) {
	return openStore(ctx, h, "")
}

// openStore reads h's configuration and opens the store at url (a path,
// sqlite:PATH or postgres://...), or the configured one when url is "".
func openStore(ctx context.Context, h, url string) (config.Config, *store.Store, error) {
	cfg, err := config.Load(h, os.Getenv)
	if err != nil {
		return cfg, nil, err
	}
	st, err := store.OpenURL(ctx, storeURL(cfg, url), nil)
	return cfg, st, err
}

// storeURL is url, or the configured store when url is "".
func storeURL(cfg config.Config, url string) string {
	if url != "" {
		return url
	}
	return cfg.StoreURL()
}
